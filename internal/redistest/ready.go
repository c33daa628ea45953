package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// errPortInUse marks a start that lost the race for its port to another
// process; launch then tries a new port.
var errPortInUse = errors.New("port already in use")

// waitReady waits until the server answers INFO with p's process id and has
// finished loading its data. Checking the pid matters: if another process
// grabbed the port, some other server may answer there while ours has
// exited.
func (s *Server) waitReady(p *process) error {
	c := s.adminClient()
	defer func() { _ = c.Close() }()
	want := strconv.Itoa(p.pid())
	err := poll(context.Background(), readyTimeout, func(ctx context.Context) error {
		if p.exited() {
			return permanent(errExited)
		}
		// Plain TCP until the port is open: a failed dial would put the
		// client's pool into its one-second dial back-off and log it.
		dialer := net.Dialer{Timeout: time.Second}
		conn, err := dialer.DialContext(ctx, "tcp", s.Addr())
		if err != nil {
			return err
		}
		_ = conn.Close() // only the dial mattered
		text, err := c.Info(ctx, "server", "persistence").Result()
		if err != nil {
			return err
		}
		info := parseInfo(text)
		if info["process_id"] != want {
			return fmt.Errorf("answered by process %s, not %s", info["process_id"], want)
		}
		if info["loading"] == "1" {
			return errors.New("still loading its data")
		}
		return nil
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errExited):
		tail := s.logTail()
		if strings.Contains(tail, "Address already in use") {
			return fmt.Errorf("%s: %w:\n%s", s, errPortInUse, tail)
		}
		return fmt.Errorf("%s exited at start:\n%s", s, tail)
	default:
		return fmt.Errorf("%s did not become ready: %w\n%s", s, err, s.logTail())
	}
}

var errExited = errors.New("process exited")

// logTailLines is how much of a log a failure message quotes.
const logTailLines = 25

// logTail returns the end of the server's log and anything it printed
// before opening it.
func (s *Server) logTail() string {
	var b strings.Builder
	for _, path := range []string{s.consolePath(), s.logPath()} {
		data, err := os.ReadFile(path) //nolint:gosec // G304: the server's own log files under its home directory
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > logTailLines {
			lines = lines[len(lines)-logTailLines:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", path, strings.Join(lines, "\n"))
	}
	if b.Len() == 0 {
		return "(no log output)"
	}
	return b.String()
}
