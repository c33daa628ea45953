package chaos

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// relay forwards TCP connections on loopback to an upstream server until
// Partition; from then on it drops everything both ways and never closes
// a connection on its own, as a real partition carries no FIN: a master
// sees its replica fall silent, not leave, even when the replica, cut off
// on the other side, closes its end (a promotion does). faultproxy's
// toxiproxy passes such a close on, and the master then refuses writes at
// once instead of after min-replicas-max-lag.
type relay struct {
	ln       net.Listener
	upstream string
	cut      atomic.Bool
	mu       sync.Mutex
	conns    []net.Conn
	wg       sync.WaitGroup
}

// newRelay starts a relay to upstream, closed with all its connections
// when t ends.
func newRelay(t *testing.T, upstream string) *relay {
	t.Helper()
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, upstream: upstream}
	r.wg.Go(func() { r.serve(t.Context()) })
	t.Cleanup(func() {
		_ = ln.Close()
		r.mu.Lock()
		for _, c := range r.conns {
			_ = c.Close()
		}
		r.mu.Unlock()
		r.wg.Wait()
	})
	return r
}

// Addr is the address to dial instead of the upstream's.
func (r *relay) Addr() string { return r.ln.Addr().String() }

// Partition drops all traffic from now on, leaving connections open.
func (r *relay) Partition() { r.cut.Store(true) }

func (r *relay) serve(ctx context.Context) {
	for {
		down, err := r.ln.Accept()
		if err != nil {
			return // closed at the test's end
		}
		up, err := new(net.Dialer).DialContext(ctx, "tcp", r.upstream)
		if err != nil {
			_ = down.Close()
			continue
		}
		r.mu.Lock()
		r.conns = append(r.conns, down, up)
		r.mu.Unlock()
		r.wg.Go(func() { r.pipe(up, down) })
		r.wg.Go(func() { r.pipe(down, up) })
	}
}

// pipe copies src to dst until src ends, when it closes dst — unless the
// relay is partitioned: then it reads and drops, and leaves dst open.
func (r *relay) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if r.cut.Load() {
			if err != nil {
				return
			}
			continue
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			_ = dst.Close()
			return
		}
	}
}
