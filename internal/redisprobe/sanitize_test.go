/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisprobe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/redistest"
)

// reply is an error reply as go-redis returns it (a redis.Error).
type reply string

func (r reply) Error() string { return string(r) }
func (reply) RedisError()     {}

func TestStatusText(t *testing.T) {
	opErr := func(errno syscall.Errno) error {
		return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", errno)}
	}
	long := "ERR " + strings.Repeat("é", 150)
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"reply", fmt.Errorf("INFO: %w", reply("NOPERM User x has no permissions to run the 'info' command")), "NOPERM User x has no permissions to run the 'info' command"},
		{"reply with control characters", reply("LOADING Redis is\r\nloading\x1b[31m\u202e the dataset"), "LOADING Redis is loading [31m the dataset"},
		{"long reply", reply(long), long[:200] + "…"},
		{"reply with invalid UTF-8", reply("ERR \xff\xfe"), "ERR ?"},
		{"reply echoing the arguments", reply("ERR unknown command 'config', with args beginning with: 'set' 'min-replicas-to-write' '1' "), "ERR unknown command 'config'"},
		{"reply under ErrConfigUnavailable", fmt.Errorf("%w: CONFIG GET: %w", ErrConfigUnavailable, reply("ERR unknown command 'CONFIG'")), "ERR unknown command 'CONFIG'"},
		{"address not allowed", fmt.Errorf("%w: 10.1.2.3:6379", ErrAddressNotAllowed), "address not allowed (outside --allowed-redis-cidrs)"},
		{"unknown master", fmt.Errorf("%w %q", ErrUnknownMaster, "mymaster"), "sentinel does not know the master"},
		{"config unavailable", fmt.Errorf("%w: CONFIG GET save returned nothing", ErrConfigUnavailable), "CONFIG is unavailable"},
		{"pool closed", ErrPoolClosed, "pool closed"},
		{"refused", opErr(syscall.ECONNREFUSED), "connection refused"},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, "connection reset"},
		{"no route", opErr(syscall.EHOSTUNREACH), "no route to host"},
		{"network unreachable", opErr(syscall.ENETUNREACH), "network unreachable"},
		{"host not found", &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "redis.nosuch", IsNotFound: true}}, "host not found"},
		{"DNS server failure", &net.DNSError{Err: "server misbehaving", Name: "redis.example"}, "DNS lookup failed"},
		{"DNS timeout", &net.DNSError{Err: "i/o timeout", Name: "redis.example", IsTimeout: true}, "timeout"},
		{"read timeout", &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, "timeout"},
		{"context deadline", fmt.Errorf("INFO: %w", context.DeadlineExceeded), "timeout"},
		{"canceled", context.Canceled, "canceled"},
		{"EOF", io.EOF, "connection closed by the server"},
		{"unknown CA", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, "TLS handshake failed: certificate signed by unknown authority"},
		{"name mismatch", &tls.CertificateVerificationError{Err: x509.HostnameError{Certificate: &x509.Certificate{DNSNames: []string{"hunter2.internal"}}, Host: "redis"}}, "TLS handshake failed: certificate name mismatch"},
		{"expired", x509.CertificateInvalidError{Reason: x509.Expired, Detail: "hunter2"}, "TLS handshake failed: certificate expired or not yet valid"},
		{"not a TLS server", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake", RecordHeader: [5]byte{'H', 'T', 'T', 'P', '/'}}, "TLS handshake failed: not a TLS server"},
		{"alert", &net.OpError{Op: "remote error", Err: tls.AlertError(42)}, "TLS handshake failed: tls: bad certificate"},
		{"protocol: can't parse", fmt.Errorf("redis: can't parse %.100q", "HTTP/1.1 400 Bad Request hunter2"), "not a Redis server (unexpected reply)"},
		{"protocol: invalid reply", fmt.Errorf("INFO: %w", fmt.Errorf("redis: invalid reply: %q", "\x00hunter2\n")), "not a Redis server (unexpected reply)"},
		{"anything else", errors.New("hunter2"), "unknown error"},
	}
	for _, c := range cases {
		if got := StatusText(c.err); got != c.want {
			t.Errorf("%s: StatusText(%v) = %q, want %q", c.name, c.err, got, c.want)
		}
	}
}

// TestStatusTextNonRedisPeers has the controller's probe (Probe through a
// Pool client) talk to peers that are not Redis. go-redis quotes what they
// sent in its errors; StatusText must not.
func TestStatusTextNonRedisPeers(t *testing.T) {
	// An old Redis refuses HELLO (go-redis's first command), answers PING,
	// and here sends garbage for INFO: the bad bytes come mid-stream.
	helloRefused := "-ERR unknown command 'HELLO'\r\n"
	cases := []struct {
		name   string
		script []string
		hang   bool
		// leaks is what go-redis's error quotes of the peer's bytes
		// (the test would prove little if it quoted nothing).
		leaks string
		want  string
	}{
		{"HTTP server", []string{"HTTP/1.1 400 Bad Request\r\nSecret-Banner: hunter2\r\n\r\n"}, false, "HTTP/1.1 400", "not a Redis server (unexpected reply)"},
		{"garbage after PONG", []string{helloRefused, "+PONG\r\n", "hunter2 garbage\r\n"}, true, "hunter2", "not a Redis server (unexpected reply)"},
		{"status where a map is due", []string{"+OK hunter2\r\n"}, false, "hunter2", "not a Redis server (unexpected reply)"},
		{"array where a string is due", []string{helloRefused, "+PONG\r\n", "*1\r\n$7\r\nhunter2\r\n"}, true, "", "not a Redis server (unexpected reply)"},
		{"binary blob", []string{"\x00\x01\xfe\xffhunter2\x80\x81\n"}, false, "hunter2", "not a Redis server (unexpected reply)"},
		{"silent", nil, true, "", "timeout"},
		{"closes after a read", []string{""}, false, "", "connection closed by the server"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			peer := startPeer(t, c.hang, c.script...)
			p := newPool(t, PoolOptions{Timeout: 300 * time.Millisecond})
			_, err := Probe(ctxT(t), poolClient(t, p, "o", Target{Addr: peer.Addr()}))
			if err == nil {
				t.Fatal("Probe of a non-Redis peer succeeded")
			}
			if !strings.Contains(err.Error(), c.leaks) {
				t.Errorf("go-redis's error %q no longer quotes the peer: update the test", err)
			}
			got := StatusText(err)
			if got != c.want {
				t.Errorf("StatusText(%q) = %q, want %q", err, got, c.want)
			}
			if strings.Contains(got, "hunter2") || strings.Contains(got, "HTTP") {
				t.Errorf("StatusText(%q) = %q copies the peer's bytes", err, got)
			}
		})
	}
}

func TestStatusTextConnectionRefused(t *testing.T) {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	p := newPool(t, PoolOptions{})
	_, err = Probe(ctxT(t), poolClient(t, p, "o", Target{Addr: addr}))
	if got := StatusText(err); got != "connection refused" {
		t.Errorf("StatusText(%v) = %q, want connection refused", err, got)
	}
}

// TestStatusTextRedisReply shows that a real server's error reply is kept.
func TestStatusTextRedisReply(t *testing.T) {
	srv := redistest.StartStandalone(t, redistest.WithPassword("pw"))
	p := newPool(t, PoolOptions{})
	_, err := Probe(ctxT(t), poolClient(t, p, "o", Target{Addr: srv.Addr(), Credentials: Credentials{Password: "nope"}}))
	if got := StatusText(err); !strings.HasPrefix(got, "WRONGPASS ") {
		t.Errorf("StatusText(%v) = %q, want the WRONGPASS reply", err, got)
	}
}

func TestStatusTextTLS(t *testing.T) {
	srv := redistest.StartStandalone(t, redistest.WithTLS())
	http := startPeer(t, false, "HTTP/1.1 400 Bad Request\r\nSecret-Banner: hunter2\r\n\r\n")
	p := newPool(t, PoolOptions{Timeout: time.Second})
	ca := srv.CACertPEM()
	for _, c := range []struct {
		name string
		tg   Target
		want string
	}{
		{"system roots", Target{Addr: srv.Addr(), Credentials: Credentials{TLS: &TLS{}}}, "TLS handshake failed: certificate signed by unknown authority"},
		{"wrong server name", Target{Addr: srv.Addr(), Credentials: Credentials{TLS: &TLS{CAPEM: ca, ServerName: "other.redlease.test"}}}, "TLS handshake failed: certificate name mismatch"},
		{"HTTP server", Target{Addr: http.Addr(), Credentials: Credentials{TLS: &TLS{CAPEM: ca}}}, "TLS handshake failed: not a TLS server"},
	} {
		_, err := Probe(ctxT(t), poolClient(t, p, c.name, c.tg))
		if got := StatusText(err); got != c.want {
			t.Errorf("%s: StatusText(%v) = %q, want %q", c.name, err, got, c.want)
		}
	}
	if _, err := Probe(ctxT(t), poolClient(t, p, "ok", Target{Addr: srv.Addr(), Credentials: Credentials{TLS: &TLS{CAPEM: ca}}})); err != nil {
		t.Errorf("the right CA and name: %v", err)
	}
}
