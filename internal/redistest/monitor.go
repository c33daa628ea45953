package redistest

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// markTimeout bounds how long Mark waits for its marker to come through.
const markTimeout = 10 * time.Second

// Monitor is a MONITOR connection to one server: every command the server
// runs, clients' and scripts', in the order it runs them. The connection
// has no read timeout, so it outlives a paused server (go-redis's own
// Monitor helper also polls).
type Monitor struct {
	notify chan struct{} // a signal that calls or err changed
	done   chan struct{} // closed when the reader returns

	mu    sync.Mutex
	calls []Call // read, not yet returned by Mark
	err   error  // why the stream ended
}

// Call is one command a server ran, as MONITOR reports it.
type Call struct {
	Lua  bool     // run by a script or function, not sent by a client
	Args []string // the command's name and arguments
}

// Is reports whether c runs command name (any case) with args as its first
// arguments.
func (c Call) Is(name string, args ...string) bool {
	if len(c.Args) < 1+len(args) || !strings.EqualFold(c.Args[0], name) {
		return false
	}
	for i, a := range args {
		if c.Args[1+i] != a {
			return false
		}
	}
	return true
}

// Monitor opens a MONITOR connection to s, closed when t ends.
func (s *Server) Monitor(t testing.TB) *Monitor {
	t.Helper()
	conn, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(t.Context(), "tcp", s.Addr())
	if err != nil {
		t.Fatalf("redistest: MONITOR %s: %v", s, err)
	}
	if cfg := s.TLSConfig(); cfg != nil {
		conn = tls.Client(conn, cfg)
	}
	m := &Monitor{notify: make(chan struct{}, 1), done: make(chan struct{})}
	t.Cleanup(func() {
		_ = conn.Close()
		<-m.done
	})
	rd := bufio.NewReader(conn)
	cmds := [][]string{{"MONITOR"}}
	if s.password != "" {
		cmds = append([][]string{{"AUTH", s.password}}, cmds...)
	}
	for _, cmd := range cmds {
		if _, err := conn.Write(encodeCommand(cmd)); err != nil {
			t.Fatalf("redistest: %s on %s: %v", cmd[0], s, err)
		}
		if line, err := rd.ReadString('\n'); err != nil || line != "+OK\r\n" {
			t.Fatalf("redistest: %s on %s = %q %v", cmd[0], s, line, err)
		}
	}
	go m.read(rd)
	return m
}

// encodeCommand is cmd as a RESP array of bulk strings.
func encodeCommand(cmd []string) []byte {
	b := fmt.Appendf(nil, "*%d\r\n", len(cmd))
	for _, a := range cmd {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b
}

// read parses the stream into m.calls until the connection ends.
func (m *Monitor) read(rd *bufio.Reader) {
	defer close(m.done)
	for {
		line, err := rd.ReadString('\n')
		var c Call
		if err == nil {
			c, err = parseMonitorLine(strings.TrimSuffix(line, "\r\n"))
		}
		m.mu.Lock()
		if err != nil {
			m.err = err
		} else {
			m.calls = append(m.calls, c)
		}
		m.mu.Unlock()
		select {
		case m.notify <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

// parseMonitorLine parses one MONITOR line:
//
//	+<unix time> [<db> <client address, or lua>] "<name>" "<arg>" ...
//
// Each argument is quoted with the escapes of Redis's sdscatrepr (\", \\,
// \n, \r, \t, \a, \b, \xHH), all of which Go's strconv reads.
func parseMonitorLine(line string) (Call, error) {
	_, rest, ok := strings.Cut(line, " [")
	source, rest, ok2 := strings.Cut(rest, "] ")
	if !strings.HasPrefix(line, "+") || !ok || !ok2 {
		return Call{}, fmt.Errorf("redistest: not a MONITOR line: %q", line)
	}
	_, from, _ := strings.Cut(source, " ")
	c := Call{Lua: from == "lua"}
	for rest != "" {
		quoted, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return Call{}, fmt.Errorf("redistest: MONITOR line %q: %w", line, err)
		}
		arg, err := strconv.Unquote(quoted)
		if err != nil {
			return Call{}, fmt.Errorf("redistest: MONITOR line %q: %w", line, err)
		}
		c.Args = append(c.Args, arg)
		rest = strings.TrimPrefix(rest[len(quoted):], " ")
	}
	if len(c.Args) == 0 {
		return Call{}, fmt.Errorf("redistest: MONITOR line without a command: %q", line)
	}
	return c, nil
}

// Mark sends ECHO marker through c and returns every command the server
// ran after the previous Mark (or since the monitor opened) and before that
// ECHO, in the server's order. Unlike counting what has arrived, it cannot
// return early: MONITOR reports a command before its reply. It fails t if
// the stream ends or the marker does not arrive within 10 s.
func (m *Monitor) Mark(t testing.TB, c redis.Cmdable, marker string) []Call {
	t.Helper()
	if err := c.Echo(t.Context(), marker).Err(); err != nil {
		t.Fatalf("redistest: ECHO %s: %v", marker, err)
	}
	deadline := time.NewTimer(markTimeout)
	defer deadline.Stop()
	for seen := 0; ; {
		m.mu.Lock()
		calls, err := m.calls, m.err
		for ; seen < len(calls); seen++ {
			if !calls[seen].Lua && calls[seen].Is("echo", marker) {
				m.calls = calls[seen+1:]
				m.mu.Unlock()
				return calls[:seen:seen]
			}
		}
		m.mu.Unlock()
		if err != nil {
			t.Fatalf("redistest: the MONITOR stream ended before %s: %v", marker, err)
		}
		select {
		case <-m.notify:
		case <-deadline.C:
			t.Fatalf("redistest: %s did not come through MONITOR within %v", marker, markTimeout)
		}
	}
}
