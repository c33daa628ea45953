package lock_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlease/redlease/pkg/lock"
)

func TestDerivedKeysShareTheLockKeysSlot(t *testing.T) {
	tests := []struct {
		key, fence, events string
	}{
		{"settlement", "{settlement}:fence", "{settlement}:events"},
		{"billing/nightly", "{billing/nightly}:fence", "{billing/nightly}:events"},
		// A key that already has a hash tag keeps it: same slot as the key.
		{"orders{42}:lock", "orders{42}:lock:fence", "orders{42}:lock:events"},
		// "{}" is not a hash tag in Redis Cluster: the whole key is hashed.
		{"a{}b", "{a{}b}:fence", "{a{}b}:events"},
	}
	for _, tt := range tests {
		if got := lock.FenceKey(tt.key); got != tt.fence {
			t.Errorf("FenceKey(%q) = %q, want %q", tt.key, got, tt.fence)
		}
		if got := lock.EventsChannel(tt.key); got != tt.events {
			t.Errorf("EventsChannel(%q) = %q, want %q", tt.key, got, tt.events)
		}
	}
}

func TestDefaults(t *testing.T) {
	if got := lock.DefaultKey("billing", "nightly"); got != "billing/nightly" {
		t.Errorf("DefaultKey = %q", got)
	}
	if got := lock.DefaultRenewInterval(30 * time.Second); got != 10*time.Second {
		t.Errorf("DefaultRenewInterval(30s) = %v, want 10s", got)
	}
}

func TestValuesAreUniqueUnguessableAndNameTheirHolder(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		v, err := lock.NewValue("pod-a:7")
		if err != nil {
			t.Fatal(err)
		}
		if seen[v] {
			t.Fatalf("value %q repeated", v)
		}
		seen[v] = true
		random := strings.TrimPrefix(v, "pod-a:7/")
		if len(random) != 40 { // 20 bytes of crypto/rand, hex
			t.Fatalf("random part %q is %d chars, want 40", random, len(random))
		}
		if got := lock.IdentityFromValue(v); got != "pod-a:7" {
			t.Fatalf("IdentityFromValue(%q) = %q", v, got)
		}
	}
	for _, foreign := range []string{"", "locked", "1", "a/b", "/" + strings.Repeat("0", 40)} {
		if got := lock.IdentityFromValue(foreign); got != "" {
			t.Errorf("IdentityFromValue(%q) = %q, want empty", foreign, got)
		}
	}
}

func TestValidateKey(t *testing.T) {
	tests := []struct {
		key string
		ok  bool
	}{
		{"settlement", true},
		{"ns/name", true},
		{strings.Repeat("k", 512), true},
		{"", false},
		{strings.Repeat("k", 513), false},
		{"has space", false},
		{"tab\tkey", false},
		{"new\nline", false},
		{"orders{42}", true},
		{"a{b", true},
		{"a}b", false},
		{"a{}b}", false},
	}
	for _, tt := range tests {
		err := lock.ValidateKey(tt.key)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, lock.ErrInvalidConfig)) {
			t.Errorf("ValidateKey(%.20q) = %v, want ok=%v", tt.key, err, tt.ok)
		}
	}
}
