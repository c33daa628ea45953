package chaos

import (
	"strings"
	"testing"
)

// MaxConcurrent counts open claims per key: touching claims do not
// overlap, other keys do not count, and a stretch above the limit is
// reported once with its largest set of holders.
func TestMaxConcurrent(t *testing.T) {
	c := func(client, key string, from, until int64) Claim {
		return Claim{Client: client, Key: key, From: from, Until: until}
	}
	claims := []Claim{
		c("a", "k", 0, 10), c("b", "k", 0, 10), c("c", "k", 10, 20), // c starts as a and b end
		c("x", "other", 0, 30), c("y", "other", 0, 30),
	}
	if vs := MaxConcurrent(claims, 2); len(vs) != 0 {
		t.Fatalf("within the limit: %v", vs)
	}
	claims = append(claims, c("d", "k", 5, 12), c("e", "k", 6, 8))
	vs := MaxConcurrent(claims, 2)
	if len(vs) != 1 || !strings.HasPrefix(string(vs[0]), `4 holders of "k" at once (at most 2 allowed) for 5ns`) {
		t.Fatalf("violations %q, want one stretch of 5ns (from d's start to a's and b's end) with 4 holders at most", vs)
	}
	if got := len(MaxConcurrent(claims, 1)); got != 2 {
		t.Fatalf("at most 1: %d stretches, want 2 (k from 0 to 12: c starts as a and b end, other from 0 to 30)", got)
	}
}
