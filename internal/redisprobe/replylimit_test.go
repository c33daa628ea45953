/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisprobe

import (
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/redisconn/certtest"
	"github.com/redlease/redlease/internal/redistest"
)

// hostileHeaders are replies to PING that announce more than go-redis can
// allocate: before the reply limit, the first crashed the test binary
// (makeslice: len out of range in go-redis's bulk reader) and the others
// asked the runtime for terabytes.
var hostileHeaders = []string{
	"$1125899906842624\r\n",
	"*1125899906842624\r\n",
	"$1099511627776\r\n",
	"%1099511627776\r\n",
	"~1099511627776\r\n",
	">2\r\n+message\r\n*1099511627776\r\n",
	"*2\r\n$3\r\nabc\r\n*1099511627776\r\n",
	"|1\r\n+a\r\n+b\r\n$1099511627776\r\n",
}

// TestHostileReplyIsRefused: a server that answers PING with a huge length
// fails the probe with ErrReplyTooLarge, over TCP and inside TLS, whether
// the header comes in one read or one byte at a time.
func TestHostileReplyIsRefused(t *testing.T) {
	p := newPool(t, PoolOptions{Timeout: 2 * time.Second})
	for _, reply := range hostileHeaders {
		for _, c := range []struct {
			name string
			addr string
			tls  *TLS
		}{
			{"tcp", startPeer(t, true, reply).Addr(), nil},
			{"dribbled", startDribbler(t, reply), nil},
			{"tls", startTLSPeer(t, reply), &TLS{InsecureSkipVerify: true}},
		} {
			owner := c.name + " " + reply
			_, err := Probe(ctxT(t), poolClient(t, p, owner, Target{Addr: c.addr, Credentials: Credentials{TLS: c.tls}}))
			if !errors.Is(err, ErrReplyTooLarge) {
				t.Errorf("%s %q: Probe = %v, want ErrReplyTooLarge", c.name, reply, err)
			}
			if got, want := StatusText(err), "the server's reply is larger than the controller reads"; got != want {
				t.Errorf("%s %q: StatusText = %q, want %q", c.name, reply, got, want)
			}
			p.Release(owner)
		}
	}
}

// TestReplyLimitPassesRedis: replies of a real server go through (INFO,
// ACL LIST, a value just under the limit, then one over it on the same
// client, which the next command survives on a new connection).
func TestReplyLimitPassesRedis(t *testing.T) {
	srv := redistest.StartStandalone(t)
	p := newPool(t, PoolOptions{PoolSize: 1})
	c := poolClient(t, p, "o", Target{Addr: srv.Addr()})
	ctx := ctxT(t)
	if _, err := Probe(ctx, c); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	if err := c.Do(ctx, "ACL", "LIST").Err(); err != nil {
		t.Fatalf("ACL LIST: %v", err)
	}
	under := strings.Repeat("x", MaxReplyBytes-1)
	if err := c.Set(ctx, "under", under, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(ctx, "under").Result(); err != nil || len(got) != len(under) {
		t.Fatalf("GET of %d bytes: %d bytes, %v", len(under), len(got), err)
	}
	if err := c.Append(ctx, "under", "yy").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, "under").Err(); !errors.Is(err, ErrReplyTooLarge) {
		t.Fatalf("GET of %d bytes: %v, want ErrReplyTooLarge", MaxReplyBytes+1, err)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after a refused reply: %v", err)
	}
}

// TestRESPScanner: the scanner follows RESP2 and RESP3 replies, fed whole or
// one byte at a time, and charges each reply on its own.
func TestRESPScanner(t *testing.T) {
	ok := []string{
		"+OK\r\n", "-ERR no\r\n", ":12\r\n", "$-1\r\n", "*-1\r\n", "$0\r\n\r\n",
		"$5\r\nhe\r\nl\r\n", "*2\r\n$1\r\na\r\n*1\r\n:1\r\n",
		"%1\r\n+k\r\n$1\r\nv\r\n", "~2\r\n,1.5\r\n#t\r\n", "_\r\n", "(123\r\n",
		"=8\r\ntxt:abcd\r\n", "!3\r\nERR\r\n", "|1\r\n+a\r\n+b\r\n:1\r\n",
		">2\r\n+message\r\n$1\r\nx\r\n",
	}
	stream := strings.Join(ok, "")
	for _, chunk := range []int{len(stream), 1, 3} {
		s := respScanner{max: 64}
		for i := 0; i < len(stream); i += chunk {
			if err := s.feed([]byte(stream[i:min(i+chunk, len(stream))])); err != nil {
				t.Fatalf("chunks of %d: %v", chunk, err)
			}
		}
		if s.state != scanType || s.pending != 0 {
			t.Errorf("chunks of %d: state %d, pending %d after whole replies", chunk, s.state, s.pending)
		}
	}
	// Every reply is charged on its own: 40 replies of 40 bytes pass a
	// limit of 64, one reply of two such strings does not.
	s := respScanner{max: 64}
	one := "$40\r\n" + strings.Repeat("x", 40) + "\r\n"
	if err := s.feed([]byte(strings.Repeat(one, 40))); err != nil {
		t.Errorf("40 replies of 40 bytes: %v", err)
	}
	if err := s.feed([]byte("*2\r\n" + one + one)); !errors.Is(err, ErrReplyTooLarge) {
		t.Errorf("one reply of 80 bytes: %v, want ErrReplyTooLarge", err)
	}
	for _, bad := range []string{"$12x\r\n", "+" + strings.Repeat("x", maxLineBytes+1)} {
		s := respScanner{max: 64}
		if err := s.feed([]byte(bad)); !errors.Is(err, ErrReplyTooLarge) {
			t.Errorf("%.20q: %v, want ErrReplyTooLarge", bad, err)
		}
	}
}

// startDribbler is a peer that answers the first command with reply one
// byte per write, then keeps the connection open.
func startDribbler(t *testing.T, reply string) string {
	t.Helper()
	return redistest.ServeFake(t, nil, func(c net.Conn) {
		buf := make([]byte, 4096)
		if _, err := c.Read(buf); err != nil {
			return
		}
		for i := range len(reply) {
			if _, err := c.Write([]byte{reply[i]}); err != nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	})
}

// startTLSPeer is a TLS peer with a throwaway CA's certificate that answers
// the first command with reply.
func startTLSPeer(t *testing.T, reply string) string {
	t.Helper()
	return redistest.ServeFake(t, &tls.Config{Certificates: []tls.Certificate{certtest.NewCA(t, "peer CA").ServerCert(t, "127.0.0.1")}, MinVersion: tls.VersionTLS12}, func(c net.Conn) {
		serve(c, true, []string{reply})
	})
}
