/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisprobe

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// peer is a TCP server on 127.0.0.1 that is not Redis: it answers the
// n-th read of a connection with script[n], then closes the connection, or
// keeps it silent and open when hang is set. It counts the connections it
// accepted.
type peer struct {
	ln      net.Listener
	accepts atomic.Int32
}

func startPeer(t *testing.T, hang bool, script ...string) *peer {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &peer{ln: ln}
	var (
		wg    sync.WaitGroup
		conns []net.Conn // the accept loop's until it ends
	)
	accepting := make(chan struct{})
	go func() {
		defer close(accepting)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.accepts.Add(1)
			conns = append(conns, c)
			wg.Go(func() { serve(c, hang, script) })
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-accepting
		for _, c := range conns {
			_ = c.Close()
		}
		wg.Wait()
	})
	return p
}

func serve(c net.Conn, hang bool, script []string) {
	buf := make([]byte, 4096)
	for _, reply := range script {
		if _, err := c.Read(buf); err != nil {
			return
		}
		if _, err := c.Write([]byte(reply)); err != nil {
			return
		}
	}
	if !hang {
		_ = c.Close()
		return
	}
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}

func (p *peer) Addr() string { return p.ln.Addr().String() }
