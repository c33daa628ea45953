/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisprobe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
)

// MaxReplyBytes bounds what one reply may make go-redis allocate: the
// lengths of its bulk strings plus elementBytes per element its arrays,
// maps, sets and attributes announce. go-redis allocates an announced
// length before it reads the bytes (make([]byte, n+2) for a bulk string,
// make([]any, n) for an array), so a server that announces 2^50 bytes
// would crash the manager, and 2^40 is an out-of-memory error no recover
// catches. The largest replies the controller reads legitimately are ACL
// LIST and CLUSTER SHARDS of big deployments and a batched read of 512
// bounded keys: a few MiB.
const MaxReplyBytes = 16 << 20

// maxLineBytes bounds a simple string, error, number or header line
// (go-redis accumulates a line until its CRLF). Replies the controller
// reads put their long text (INFO) in bulk strings.
const maxLineBytes = 64 << 10

// elementBytes is what go-redis allocates per announced aggregate element
// (an interface value).
const elementBytes = 16

// ErrReplyTooLarge is returned, wrapped, by a read whose reply announces
// more than MaxReplyBytes: the connection is then unusable, go-redis
// closes it, and the command fails with this error.
var ErrReplyTooLarge = errors.New("redisprobe: the server's reply is larger than the controller reads")

// limitReplies wraps a dialer so that each connection refuses replies
// larger than limit (see limitConn). It wraps the connection go-redis reads
// from: inside TLS when the dialer makes TLS connections.
func limitReplies(dial func(ctx context.Context, network, addr string) (net.Conn, error), limit int64) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		lc := &limitConn{Conn: c, scan: respScanner{max: limit}}
		if sc, ok := c.(syscall.Conn); ok {
			// go-redis's health check peeks at the socket of a plain TCP
			// connection; limitConn never reads ahead, so the socket is
			// still what go-redis has not read.
			return &limitSyscallConn{limitConn: lc, sc: sc}, nil
		}
		return lc, nil
	}
}

// limitConn is a connection whose reads go through a RESP scanner that
// follows the replies byte by byte as go-redis reads them, never reading
// ahead, and fails the read that would hand go-redis a header announcing
// too much (before go-redis sees the header's end).
type limitConn struct {
	net.Conn
	scan respScanner
	err  error
}

func (c *limitConn) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.Conn.Read(p)
	if serr := c.scan.feed(p[:n]); serr != nil {
		c.err = serr
		return 0, serr
	}
	return n, err
}

// limitSyscallConn is a limitConn over a connection with a socket.
type limitSyscallConn struct {
	*limitConn
	sc syscall.Conn
}

func (c *limitSyscallConn) SyscallConn() (syscall.RawConn, error) { return c.sc.SyscallConn() }

// respScanner follows RESP2 and RESP3 replies. It keeps the state between
// reads: the part of a header line seen so far, the bytes of a bulk string
// left to skip, the elements left in the current reply, and what the
// current reply announced.
type respScanner struct {
	max int64

	state    scanState
	kind     byte  // the current item's type byte
	line     int   // bytes of the current line so far
	num      int64 // the header's length so far
	neg      bool  // the header's length is negative (a null)
	digits   int
	skip     int64 // bulk bytes (and CRLF) left
	pending  int64 // items left to complete the current reply; 0 between replies
	announce int64 // what the current reply announced
}

type scanState int

const (
	scanType scanState = iota // expecting an item's type byte
	scanLine                  // inside a header or simple line
	scanBody                  // inside a bulk string's bytes
)

func (s *respScanner) feed(b []byte) error {
	for i := 0; i < len(b); {
		switch s.state {
		case scanType:
			s.kind, s.line, s.num, s.neg, s.digits = b[i], 0, 0, false, 0
			if s.pending == 0 {
				s.pending, s.announce = 1, 0
			}
			s.state = scanLine
			i++
		case scanLine:
			if err := s.lineByte(b[i]); err != nil {
				return err
			}
			i++
		case scanBody:
			k := min(s.skip, int64(len(b)-i))
			s.skip -= k
			i += int(k)
			if s.skip == 0 {
				s.done()
			}
		}
	}
	return nil
}

// lengthed reports the type bytes whose line is a length or a count: bulk
// string, verbatim string, bulk error, array, set, push, map, attribute.
func lengthed(kind byte) bool {
	switch kind {
	case '$', '=', '!', '*', '~', '>', '%', '|':
		return true
	}
	return false
}

func (s *respScanner) lineByte(c byte) error {
	s.line++
	if s.line > maxLineBytes {
		return fmt.Errorf("%w: a line of more than %d bytes", ErrReplyTooLarge, maxLineBytes)
	}
	if c == '\n' {
		return s.header()
	}
	if !lengthed(s.kind) || c == '\r' {
		return nil
	}
	switch {
	case c == '-' && s.digits == 0 && !s.neg:
		s.neg = true
	case c >= '0' && c <= '9':
		s.digits++
		s.num = s.num*10 + int64(c-'0')
		if s.num > s.max {
			return fmt.Errorf("%w: a %q header announces more than %d", ErrReplyTooLarge, s.kind, s.max)
		}
	default:
		return fmt.Errorf("%w: a %q header is not a length", ErrReplyTooLarge, s.kind)
	}
	return nil
}

// header ends a line: a simple item is complete, a bulk string's bytes
// follow, an aggregate adds its elements to the reply.
func (s *respScanner) header() error {
	if !lengthed(s.kind) || s.neg {
		s.done()
		return nil
	}
	n := s.num
	switch s.kind {
	case '$', '=', '!':
		if err := s.charge(n); err != nil {
			return err
		}
		s.skip, s.state = n+2, scanBody
		return nil
	case '%':
		n *= 2
	case '|':
		// An attribute precedes the reply it annotates: it is no item of
		// its own.
		n = 2*n + 1
	}
	if err := s.charge(n * elementBytes); err != nil {
		return err
	}
	s.pending += n
	s.done()
	return nil
}

func (s *respScanner) charge(n int64) error {
	s.announce += n
	if s.announce > s.max {
		return fmt.Errorf("%w: it announces more than %d bytes", ErrReplyTooLarge, s.max)
	}
	return nil
}

// done completes an item; the reply is complete with its last item.
func (s *respScanner) done() {
	s.state = scanType
	s.pending--
}
