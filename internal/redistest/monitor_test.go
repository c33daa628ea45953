package redistest

import (
	"slices"
	"testing"
)

func TestParseMonitorLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		line    string
		want    Call
		wantErr bool
	}{
		{"client", `+1733240000.123456 [0 127.0.0.1:50000] "set" "k" "v"`, Call{Args: []string{"set", "k", "v"}}, false},
		{"script", `+1733240000.123456 [0 lua] "HSET" "h" "token" "7"`, Call{Lua: true, Args: []string{"HSET", "h", "token", "7"}}, false},
		{"unix socket", `+1733240000.123456 [3 unix:/tmp/r.sock] "ping"`, Call{Args: []string{"ping"}}, false},
		{"escapes", `+1733240000.123456 [0 127.0.0.1:50000] "set" "a \"b\" \\ \n\r\t" "\xff\x00"`, Call{Args: []string{"set", "a \"b\" \\ \n\r\t", "\xff\x00"}}, false},
		{"empty argument", `+1733240000.123456 [0 127.0.0.1:50000] "echo" ""`, Call{Args: []string{"echo", ""}}, false},
		{"not MONITOR", `+OK`, Call{}, true},
		{"no command", `+1733240000.123456 [0 lua] `, Call{}, true},
		{"unquoted", `+1733240000.123456 [0 lua] HSET`, Call{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseMonitorLine(tt.line)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseMonitorLine(%q) error = %v, want error %v", tt.line, err, tt.wantErr)
			}
			if got.Lua != tt.want.Lua || !slices.Equal(got.Args, tt.want.Args) {
				t.Errorf("parseMonitorLine(%q) = %+v, want %+v", tt.line, got, tt.want)
			}
		})
	}
}

// TestMonitor: a Mark returns what the server ran since the previous one,
// clients' commands and scripts' apart, arguments byte for byte, on a
// server that wants a password.
func TestMonitor(t *testing.T) {
	t.Parallel()
	s := StartStandalone(t, WithPassword("secret"))
	m := s.Monitor(t)
	c := s.Client(t)
	ctx := t.Context()
	value := "a \"quoted\" value\nwith\x00bytes\xff"
	if err := c.Set(ctx, "k", value, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Eval(ctx, "return redis.call('SET', KEYS[1], ARGV[1])", []string{"s"}, "x").Err(); err != nil {
		t.Fatal(err)
	}
	first := m.Mark(t, c, "first")
	want := []Call{
		{Args: []string{"set", "k", value}},
		{Args: []string{"eval", "return redis.call('SET', KEYS[1], ARGV[1])", "1", "s", "x"}},
		{Lua: true, Args: []string{"SET", "s", "x"}},
	}
	var got []Call
	for _, call := range first {
		if call.Is("set") || call.Is("eval") { // not the client's handshake
			got = append(got, call)
		}
	}
	if !slices.EqualFunc(got, want, func(a, b Call) bool { return a.Lua == b.Lua && slices.Equal(a.Args, b.Args) }) {
		t.Errorf("first Mark = %+v, want %+v among them", first, want)
	}

	if err := c.Get(ctx, "k").Err(); err != nil {
		t.Fatal(err)
	}
	second := m.Mark(t, c, "second")
	if len(second) != 1 || !second[0].Is("get", "k") || second[0].Lua {
		t.Errorf("second Mark = %+v, want only the GET since the first", second)
	}
}
