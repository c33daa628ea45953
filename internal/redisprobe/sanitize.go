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
	"io"
	"net"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/redisconn"
)

// maxReplyText bounds the part of a Redis error reply StatusText keeps.
const maxReplyText = 200

// StatusText is err as the controller may show it in a resource's status
// (status.endpoints[].lastError, condition messages), where anyone who can
// read the resource sees it. A resource can point the controller at any
// peer, and go-redis quotes what a peer sent in its protocol errors (an HTTP
// server's banner, say), so StatusText never copies error text: it returns
// a Redis error reply (what a Redis server chose to say, such as "NOPERM
// ..." or "LOADING ..."; bounded, control characters removed), a fixed
// class for network, TLS, protocol and this package's own errors, or
// "unknown error". It returns "" for nil.
func StatusText(err error) string {
	if err == nil {
		return ""
	}
	var re redis.Error
	if errors.As(err, &re) {
		return replyText(re.Error())
	}
	for _, own := range []error{ErrAddressNotAllowed, ErrUnknownMaster, ErrConfigUnavailable, ErrPoolClosed, ErrReplyTooLarge, ErrClientPanicked} {
		if errors.Is(err, own) {
			return strings.TrimPrefix(own.Error(), "redisprobe: ")
		}
	}
	if s := tlsText(err); s != "" {
		return s
	}
	if isProtocolError(err) {
		return "not a Redis server (unexpected reply)"
	}
	return networkText(err)
}

// replyText is a Redis error reply made safe for status: without the
// arguments an "unknown command" reply echoes (a command's values are no
// business of the status, and would make its text change with them),
// valid UTF-8, no control or format characters (newlines, escapes, bidi
// overrides), spaces collapsed, at most maxReplyText bytes.
func replyText(s string) string {
	s = strings.ToValidUTF8(redisconn.WithoutEchoedArgs(s), "?")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= maxReplyText {
		return s
	}
	cut := maxReplyText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// tlsText classifies a failed TLS handshake. The errors' own text is not
// used: x509 errors quote the peer certificate's names.
func tlsText(err error) string {
	var (
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		verify    *tls.CertificateVerificationError
		record    tls.RecordHeaderError
		alert     tls.AlertError
	)
	const prefix = "TLS handshake failed: "
	switch {
	case errors.As(err, &unknownCA):
		return prefix + "certificate signed by unknown authority"
	case errors.As(err, &hostname):
		return prefix + "certificate name mismatch"
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return prefix + "certificate expired or not yet valid"
	case errors.As(err, &invalid):
		return prefix + "certificate not valid"
	case errors.As(err, &verify):
		return prefix + "certificate not verified"
	case errors.As(err, &record):
		return prefix + "not a TLS server"
	case errors.As(err, &alert):
		// The alert's name comes from crypto/tls's fixed table.
		return prefix + alert.Error()
	}
	return ""
}

// protocolMarkers are the starts of go-redis's reply-parsing errors
// (internal/proto and the commands' readers). They go on with the bytes the
// peer sent, which is why they are recognised and never copied.
var protocolMarkers = []string{
	"redis: can't parse",
	"redis: can't read",
	"redis: invalid reply",
	"redis: invalid line",
	"redis: got ",
	"redis: unexpected type",
	"redis: buffer too small",
	"redis: the length of the array",
	"redis: RESP3",
	"expected digit or CRLF",
	") value out of range", // bigInt(…)
}

func isProtocolError(err error) bool {
	msg := err.Error()
	for _, m := range protocolMarkers {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// networkText classifies dial, read and write failures.
func networkText(err error) string {
	var (
		dns *net.DNSError
		ne  net.Error
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, redis.ErrPoolTimeout),
		errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.As(err, &dns) && dns.IsNotFound:
		return "host not found"
	case errors.As(err, &dns):
		return "DNS lookup failed"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "no route to host"
	case errors.Is(err, syscall.ENETUNREACH):
		return "network unreachable"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed by the server"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "unknown error"
}
