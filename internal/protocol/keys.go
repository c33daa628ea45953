package protocol

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// MaxKeyLength bounds a lock key, in bytes.
const MaxKeyLength = 512

// DefaultKey is the key of a DistributedLock whose spec.key is empty.
func DefaultKey(namespace, name string) string { return namespace + "/" + name }

// FenceKey is the fence counter of lock key K: "{K}:fence". When K already
// carries a Redis Cluster hash tag ("a{t}b"), the counter is "K:fence", which
// keeps the same tag; either way it lives in the same slot as K.
func FenceKey(key string) string { return derivedKey(key, fenceSuffix) }

// EventsChannel is the pub/sub channel of lock key K: "{K}:events" (or
// "K:events" when K carries a hash tag). Messages: "acquired <identity>",
// "released", "granted <digest> [<digest>]" (ValueDigest).
func EventsChannel(key string) string { return derivedKey(key, eventsSuffix) }

// WaiterChannel is where the processes of identity hear the hand-offs of
// lock key K to their waiters: EventsChannel(K) + "@" + identity, in K's
// slot. A release tells the chosen waiter (and the next) there, and falls
// back to EventsChannel(K) when nobody was subscribed, so only the
// processes concerned wake.
func WaiterChannel(key, identity string) string { return EventsChannel(key) + "@" + identity }

// LineKey is the waiting line of lock key K ("{K}:line", same rule): a
// sorted set of waiters' values by arrival.
func LineKey(key string) string { return derivedKey(key, lineSuffix) }

// EpochKey is the epoch record of lock key K ("{K}:epoch", same rule): a
// hash naming the server that last granted or renewed K, for the failover
// quarantine (Quarantine).
func EpochKey(key string) string { return derivedKey(key, epochSuffix) }

// PermitLineKey is the waiting line of semaphore key K ("{K}:permit-line",
// same rule): a sorted set of waiters' values by arrival, like LineKey's. A
// semaphore's line is its own so that a hand-off of one kind (a lock key, a
// permit) never goes to a waiter of the other kind.
func PermitLineKey(key string) string { return derivedKey(key, permitLineSuffix) }

// HoldersKey is the hash of a semaphore K's confirmed holders
// ("{K}:holders", same rule): value -> "<fence> <since ms>".
func HoldersKey(key string) string { return derivedKey(key, holdersSuffix) }

// Suffixes of the keys derived from a lock key K (derivedKey).
const (
	fenceSuffix      = "fence"
	eventsSuffix     = "events"
	lineSuffix       = "line"
	epochSuffix      = "epoch"
	permitLineSuffix = "permit-line"
	holdersSuffix    = "holders"
)

func derivedKey(key, suffix string) string {
	open, closing := derivedWrap(key)
	return open + key + closing + suffix
}

// derivedWrap is what goes around key in the keys derived from it: braces
// that make it the hash tag, unless it carries one.
func derivedWrap(key string) (open, closing string) {
	if hasHashTag(key) {
		return "", ":"
	}
	return "{", "}:"
}

// scriptKeys is a script's KEYS: key, then derivedKey(key, s) for each
// suffix, the derived ones cut from one string. Every call of a lock
// script passes two to five of them: one allocation, not one each.
func scriptKeys(key string, suffixes ...string) []string {
	open, closing := derivedWrap(key)
	size := func(suffix string) int { return len(open) + len(key) + len(closing) + len(suffix) }
	n := 0
	for _, s := range suffixes {
		n += size(s)
	}
	var b strings.Builder
	b.Grow(n)
	for _, s := range suffixes {
		b.WriteString(open)
		b.WriteString(key)
		b.WriteString(closing)
		b.WriteString(s)
	}
	all := b.String()
	keys := make([]string, 1, 1+len(suffixes))
	keys[0] = key
	for _, s := range suffixes {
		keys = append(keys, all[:size(s)])
		all = all[size(s):]
	}
	return keys
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
		return errors.New("empty key")
	case len(key) > MaxKeyLength:
		return fmt.Errorf("key is %d bytes, more than %d", len(key), MaxKeyLength)
	case strings.IndexFunc(key, unicode.IsSpace) >= 0:
		return fmt.Errorf("key %q contains whitespace", key)
	case !hasHashTag(key) && strings.IndexByte(key, '}') >= 0:
		// "{K}:fence" would take its hash tag from K's '}' and land in
		// another Redis Cluster slot than K.
		return fmt.Errorf("key %q has a '}' outside a {hash tag}", key)
	}
	return nil
}
