package lock

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode"
)

// The Redis format is a compatibility contract between library versions, the
// controller and lockctl (README "Redis format"): change it only with a
// migration. Everything here is pure and shared with the controller.

const (
	// MaxKeyLength bounds a lock key, in bytes.
	MaxKeyLength = 512
	// randomBytes is the entropy of a lock value: 160 bits from crypto/rand,
	// so a value cannot be guessed to impersonate its holder.
	randomBytes = 20
	// maxFence is the largest fencing token the scripts accept: Lua numbers
	// are doubles, exact only up to 2^53 - 1. A counter started from the
	// server's clock in microseconds (about 1.8e15 today) is far below it.
	maxFence = 1<<53 - 1
)

// DefaultKey is the key of a DistributedLock whose spec.key is empty.
func DefaultKey(namespace, name string) string { return namespace + "/" + name }

// DefaultRenewInterval is the watchdog period when none is given: a third of
// the TTL, so two renewals can fail before the lease runs out.
func DefaultRenewInterval(ttl time.Duration) time.Duration { return ttl / 3 }

// FenceKey is the fence counter of lock key K: "{K}:fence". When K already
// carries a Redis Cluster hash tag ("a{t}b"), the counter is "K:fence", which
// keeps the same tag; either way it lives in the same slot as K.
func FenceKey(key string) string { return derivedKey(key, "fence") }

// EventsChannel is the pub/sub channel of lock key K: "{K}:events" (or
// "K:events" when K carries a hash tag). Messages: "acquired <identity>", "released".
func EventsChannel(key string) string { return derivedKey(key, "events") }

func derivedKey(key, suffix string) string {
	if hasHashTag(key) {
		return key + ":" + suffix
	}
	return "{" + key + "}:" + suffix
}

// hasHashTag follows Redis Cluster's rule: the first '{' followed later by a
// '}' with at least one byte between them.
func hasHashTag(key string) bool {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return false
	}
	end := strings.IndexByte(key[open+1:], '}')
	return end > 0
}

// ValidateKey reports why a key cannot be used, or nil.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return invalidConfig("empty key")
	case len(key) > MaxKeyLength:
		return invalidConfig("key is %d bytes, more than %d", len(key), MaxKeyLength)
	case strings.IndexFunc(key, unicode.IsSpace) >= 0:
		return invalidConfig("key %q contains whitespace", key)
	case !hasHashTag(key) && strings.IndexByte(key, '}') >= 0:
		// "{K}:fence" would take its hash tag from K's '}' and land in
		// another Redis Cluster slot than K.
		return invalidConfig("key %q has a '}' outside a {hash tag}", key)
	}
	return nil
}

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
		return invalidConfig("empty identity")
	case len(identity) > 253:
		return invalidConfig("identity is %d bytes, more than 253", len(identity))
	case strings.IndexFunc(identity, unicode.IsSpace) >= 0:
		return invalidConfig("identity %q contains whitespace", identity)
	}
	return nil
}

// NewValue returns a fresh lock value "<identity>/<random hex>".
func NewValue(identity string) (string, error) {
	b := make([]byte, randomBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("lock: reading crypto/rand: %w", err)
	}
	return identity + "/" + hex.EncodeToString(b), nil
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
