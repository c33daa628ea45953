package protocol_test

import (
	"slices"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/protocol"
)

// A caller's constants (TTL, window, place, identity) go into a call's
// arguments boxed once: the same arguments, two allocations fewer for an
// uncontended attempt (its TTL and identity) and one for a release (its
// window), and a waiter's attempt spares its place's too.
func TestConstantsAreBoxedOnce(t *testing.T) {
	const ttl, window = 10 * time.Second, time.Second
	place := 2*ttl + window
	k := protocol.NewConstants(ttl, window, place, "pod-a:1")
	value := "pod-a:1/" + string(make([]byte, 40))
	tests := []struct {
		name  string
		fewer float64
		call  func(k *protocol.Constants) protocol.Call
	}{
		{"uncontended attempt", 2, func(k *protocol.Constants) protocol.Call {
			return protocol.AcquireCall("job", protocol.AcquireArgs{Value: value, TTL: ttl, Fencing: true, Identity: "pod-a:1", Constants: k})
		}},
		{"waiter's attempt", 3, func(k *protocol.Constants) protocol.Call {
			return protocol.AcquireCall("job", protocol.AcquireArgs{Value: value, TTL: ttl, Fencing: true, Identity: "pod-a:1",
				Place: place, Queued: true, Constants: k})
		}},
		{"release", 1, func(k *protocol.Constants) protocol.Call {
			return protocol.ReleaseCall("job", value, protocol.ReleaseArgs{Window: window, TTL: ttl, Constants: k})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			with, without := tt.call(k), tt.call(nil)
			if !slices.Equal(with.Args, without.Args) {
				t.Fatalf("arguments %v with constants, %v without", with.Args, without.Args)
			}
			got := testing.AllocsPerRun(100, func() { tt.call(nil) }) - testing.AllocsPerRun(100, func() { tt.call(k) })
			if got != tt.fewer {
				t.Fatalf("constants spare %v allocations, want %v", got, tt.fewer)
			}
		})
	}
}

// A claim's value goes into its acquisition's and its release's arguments
// boxed once (ValueArg): the same arguments, one allocation fewer for each
// call (an uncontended acquire+release: 31 allocations, now 30).
func TestAValueIsBoxedOncePerClaim(t *testing.T) {
	const ttl, window = 10 * time.Second, time.Second
	value := "pod-a:1/" + string(make([]byte, 40))
	var boxed any = value
	tests := []struct {
		name string
		call func(arg any) protocol.Call
	}{
		{"attempt", func(arg any) protocol.Call {
			return protocol.AcquireCall("job", protocol.AcquireArgs{Value: value, TTL: ttl, Fencing: true, Identity: "pod-a:1", ValueArg: arg})
		}},
		{"release", func(arg any) protocol.Call {
			return protocol.ReleaseCall("job", value, protocol.ReleaseArgs{Window: window, ValueArg: arg})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if with, without := tt.call(boxed), tt.call(nil); !slices.Equal(with.Args, without.Args) {
				t.Fatalf("arguments %v with the boxed value, %v without", with.Args, without.Args)
			}
			if got := testing.AllocsPerRun(100, func() { tt.call(nil) }) - testing.AllocsPerRun(100, func() { tt.call(boxed) }); got != 1 {
				t.Fatalf("the boxed value spares %v allocations, want 1", got)
			}
		})
	}
}
