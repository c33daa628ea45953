package redistest

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"testing"
)

// ServeFake listens on 127.0.0.1 (TLS when cfg is set) and serves each
// connection with handle (nil: accept and never answer, like a server
// behind a firewall that drops replies) until the test ends, when the
// listener and every connection are closed. It returns the address. For
// peers no real server plays: hostile replies, silence, a scanner's target.
func ServeFake(t testing.TB, cfg *tls.Config, handle func(net.Conn)) string {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg != nil {
		ln = tls.NewListener(ln, cfg)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			if handle != nil {
				wg.Go(func() { handle(c) })
			}
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}
