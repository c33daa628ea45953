package protocol

import (
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // G505: ValueDigest names a 160-bit random value; no collision or preimage matters here
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode"
)

const (
	// randomBytes is the entropy of a lock value: 160 bits from crypto/rand,
	// so a value cannot be guessed to impersonate its holder.
	randomBytes = 20
	// MaxIdentityLength bounds a holder identity, in bytes.
	MaxIdentityLength = 253
	// MaxFence is the largest fencing token the scripts accept: Lua numbers
	// are doubles, exact only up to 2^53 - 1. A counter started from the
	// server's clock in microseconds (about 1.8e15 today) is far below it.
	MaxFence = 1<<53 - 1
)

// DefaultIdentity names this process: the pod name (POD_NAME, else the
// hostname) and the process id, e.g. "settle-7f9c-x2:1".
func DefaultIdentity() string {
	host := os.Getenv("POD_NAME")
	if host == "" {
		host, _ = os.Hostname()
	}
	if host == "" {
		host = "unknown"
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// ValidateIdentity reports why an identity cannot be used, or nil.
func ValidateIdentity(identity string) error {
	switch {
	case identity == "":
		return errors.New("empty identity")
	case len(identity) > MaxIdentityLength:
		return fmt.Errorf("identity is %d bytes, more than %d", len(identity), MaxIdentityLength)
	case strings.IndexFunc(identity, unicode.IsSpace) >= 0:
		return fmt.Errorf("identity %q contains whitespace", identity)
	case IsTombstone(identity):
		return fmt.Errorf("identity %q starts with %q, which names a revoked lock's tombstone", identity, TombstonePrefix)
	}
	return nil
}

// NewValue returns a fresh lock value "<identity>/<random hex>".
func NewValue(identity string) (string, error) {
	var random [randomBytes]byte
	if _, err := rand.Read(random[:]); err != nil {
		return "", fmt.Errorf("reading crypto/rand: %w", err)
	}
	var digits [2 * randomBytes]byte
	hex.Encode(digits[:], random[:])
	// One allocation: the builder's buffer becomes the string.
	var v strings.Builder
	v.Grow(len(identity) + 1 + len(digits))
	v.WriteString(identity)
	v.WriteByte('/')
	v.Write(digits[:])
	return v.String(), nil
}

// IdentityFromValue returns the holder identity encoded in a lock value, so
// observers can name the holder without ever exposing the value itself.
// A value not written by this library yields "".
func IdentityFromValue(value string) string {
	i := strings.LastIndexByte(value, '/')
	if i <= 0 || len(value)-i-1 != 2*randomBytes {
		return ""
	}
	return value[:i]
}

// ValueDigest is how a hand-off names the waiter it chose on the events
// channel ("granted <digest>"): the SHA-1 of its value in lowercase hex, as
// the release script's redis.sha1hex computes it. The value itself is the
// ownership proof and is never published.
func ValueDigest(value string) string {
	sum := sha1.Sum([]byte(value)) //nolint:gosec // G401: see the import: Redis scripts have only SHA-1 (redis.sha1hex)
	return hex.EncodeToString(sum[:])
}
