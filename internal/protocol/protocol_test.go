package protocol_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/protocol"
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
		if got := protocol.FenceKey(tt.key); got != tt.fence {
			t.Errorf("FenceKey(%q) = %q, want %q", tt.key, got, tt.fence)
		}
		if got := protocol.EventsChannel(tt.key); got != tt.events {
			t.Errorf("EventsChannel(%q) = %q, want %q", tt.key, got, tt.events)
		}
		if got, want := protocol.WaiterChannel(tt.key, "pod-a:7"), tt.events+"@pod-a:7"; got != want {
			t.Errorf("WaiterChannel(%q) = %q, want %q", tt.key, got, want)
		}
		// A release names waiter channels the caller could not pass in
		// KEYS: each must be in the key's slot whatever the identity.
		for _, identity := range []string{"pod-a:7", "{other}:1", "}{:2"} {
			if got, want := protocol.KeySlot(protocol.WaiterChannel(tt.key, identity)), protocol.KeySlot(tt.fence); got != want {
				t.Errorf("WaiterChannel(%q, %q) is in slot %d, the fence counter in %d", tt.key, identity, got, want)
			}
		}
	}
}

// TestScriptKeysAreTheDerivedKeys: the KEYS lists, cut from one string,
// name the same keys as the functions that derive them one by one.
func TestScriptKeysAreTheDerivedKeys(t *testing.T) {
	for _, key := range []string{"settlement", "orders{42}:lock", "a{}b", "x"} {
		for _, tt := range []struct {
			name      string
			got, want []string
		}{
			{"AcquireKeys", protocol.AcquireKeys(key), []string{key, protocol.FenceKey(key), protocol.EventsChannel(key), protocol.LineKey(key), protocol.EpochKey(key)}},
			{"RenewKeys", protocol.RenewKeys(key), []string{key, protocol.EpochKey(key)}},
			{"AcquirePermitKeys", protocol.AcquirePermitKeys(key), []string{key, protocol.FenceKey(key), protocol.EventsChannel(key), protocol.PermitLineKey(key), protocol.HoldersKey(key), protocol.EpochKey(key)}},
			{"RenewPermitKeys", protocol.RenewPermitKeys(key), []string{key, protocol.HoldersKey(key), protocol.EpochKey(key)}},
		} {
			if strings.Join(tt.got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("%s(%q) = %q, want %q", tt.name, key, tt.got, tt.want)
			}
		}
	}
}

func TestValuesAreUniqueUnguessableAndNameTheirHolder(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		v, err := protocol.NewValue("pod-a:7")
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
		if got := protocol.IdentityFromValue(v); got != "pod-a:7" {
			t.Fatalf("IdentityFromValue(%q) = %q", v, got)
		}
	}
	for _, foreign := range []string{"", "locked", "1", "a/b", "/" + strings.Repeat("0", 40)} {
		if got := protocol.IdentityFromValue(foreign); got != "" {
			t.Errorf("IdentityFromValue(%q) = %q, want empty", foreign, got)
		}
	}
}

func TestDefaultKey(t *testing.T) {
	if got := protocol.DefaultKey("billing", "nightly"); got != "billing/nightly" {
		t.Errorf("DefaultKey = %q", got)
	}
}

// TestMillisRoundsUp: TTLs and windows go to the scripts in whole
// milliseconds, rounded up, so a positive duration never becomes PX 0.
func TestMillisRoundsUp(t *testing.T) {
	for d, want := range map[time.Duration]int64{0: 0, time.Nanosecond: 1, time.Millisecond: 1, time.Millisecond + 1: 2, 1500 * time.Microsecond: 2} {
		if got := protocol.Millis(d); got != want {
			t.Errorf("Millis(%v) = %d, want %d", d, got, want)
		}
	}
}
