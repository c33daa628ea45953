package controllers

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redisprobe"
)

func TestErrorText(t *testing.T) {
	cases := []struct{ in, want string }{
		{"read tcp 127.0.0.1:51234->127.0.0.1:6379: i/o timeout", "read tcp 127.0.0.1:6379: i/o timeout"},
		{"write tcp6 [::1]:4->[::1]:6379: broken pipe", "write tcp6 [::1]:6379: broken pipe"},
		{"dial tcp 127.0.0.1:6379: connect: connection refused", "dial tcp 127.0.0.1:6379: connect: connection refused"},
		{"WRONGPASS invalid\nusername-password pair", "WRONGPASS invalid username-password pair"},
	}
	for _, c := range cases {
		if got := errorText(errors.New(c.in)); got != c.want {
			t.Errorf("errorText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := errorText(errors.New(string(make([]byte, 1000)))); len(got) > 310 {
		t.Errorf("errorText is not bounded: %d bytes", len(got))
	}
}

func TestRequeueBackoff(t *testing.T) {
	r := NewDistributedLockReconciler(nil, nil, nil, Options{ProbeInterval: 10 * time.Second})
	st := &lockState{}
	var got []time.Duration
	for range 6 {
		got = append(got, r.requeueAfter(st, false))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("backoff %v, want %v", got, want)
		}
	}
	if d := r.requeueAfter(st, true); d < 10*time.Second || d > 11*time.Second {
		t.Errorf("Ready requeue %v, want 10s plus up to 10%% jitter", d)
	}
	if d := r.requeueAfter(st, false); d != time.Second {
		t.Errorf("first backoff after Ready = %v, want 1s: being Ready resets the backoff", d)
	}
}

func TestGuardRegistry(t *testing.T) {
	g := newGuardRegistry()
	a, b, c := types.NamespacedName{Name: "a"}, types.NamespacedName{Name: "b"}, types.NamespacedName{Name: "c"}
	s := func(w, l int) redisprobe.ReplicaSettings {
		return redisprobe.ReplicaSettings{MinReplicasToWrite: w, MinReplicasMaxLag: l}
	}
	g.set(a, s(1, 10), []string{"run1"})
	g.set(b, s(2, 20), []string{"run1", "run2"})
	g.set(c, s(1, 10), []string{"run2"})
	eff, others := g.effective("run1", a)
	if eff != s(2, 10) || len(others) != 1 || others[0] != "/b" {
		t.Errorf("effective(run1, a) = %v, %v", eff, others)
	}
	if eff, others := g.effective("run3", a); eff != s(1, 10) || len(others) != 0 {
		t.Errorf("a server nobody else uses: %v, %v", eff, others)
	}
	g.forget(b)
	if eff, others := g.effective("run1", a); eff != s(1, 10) || len(others) != 0 {
		t.Errorf("after b was forgotten: %v, %v", eff, others)
	}
	g.markSeen(a)
	if g.allSeen([]types.NamespacedName{a, c}) {
		t.Errorf("c was never seen")
	}
}

// TestRedlockQuorumOf: the quorum is a majority of the spec's addresses,
// never of what a Service happens to have ready.
func TestRedlockQuorumOf(t *testing.T) {
	svc := &v1alpha1.ServiceReference{Name: "redlock", Port: 6379}
	for _, c := range []struct {
		name  string
		redis v1alpha1.RedisSpec
		want  int32
	}{
		{"three addresses", v1alpha1.RedisSpec{Addresses: []string{"a:1", "b:1", "c:1"}}, 2},
		{"five addresses", v1alpha1.RedisSpec{Addresses: []string{"a:1", "b:1", "c:1", "d:1", "e:1"}}, 3},
		{"seven addresses", v1alpha1.RedisSpec{Addresses: []string{"a:1", "b:1", "c:1", "d:1", "e:1", "f:1", "g:1"}}, 4},
		{"a service (stored before the rule)", v1alpha1.RedisSpec{Service: svc}, 0},
		{"four addresses (stored before the rule)", v1alpha1.RedisSpec{Addresses: []string{"a:1", "b:1", "c:1", "d:1"}}, 0},
		{"one address", v1alpha1.RedisSpec{Addresses: []string{"a:1"}}, 0},
		{"none", v1alpha1.RedisSpec{}, 0},
	} {
		c.redis.Mode = v1alpha1.RedisModeRedlock
		if got := redlockQuorum(&c.redis); got != c.want {
			t.Errorf("%s: quorum = %d, want %d", c.name, got, c.want)
		}
	}
}

// TestSpecProblem: specs the CRD refuses today but an older CRD stored are
// InvalidSpec, with a message that says what to do.
func TestSpecProblem(t *testing.T) {
	three := []string{"a:1", "b:1", "c:1"}
	svc := &v1alpha1.ServiceReference{Name: "redlock", Port: 6379}
	for _, c := range []struct {
		name string
		spec v1alpha1.DistributedLockSpec
		want string // a substring of the problem; "" for none
	}{
		{"standalone", v1alpha1.DistributedLockSpec{Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{"a:1"}}}, ""},
		{"standalone through a service", v1alpha1.DistributedLockSpec{Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Service: svc}}, ""},
		{"redlock on three addresses", v1alpha1.DistributedLockSpec{Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeRedlock, Addresses: three}}, ""},
		{"redlock through a service", v1alpha1.DistributedLockSpec{Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeRedlock, Service: svc}},
			"spec.redis.service: Redlock needs an explicit, odd list of ≥ 3 stable addresses"},
		{"redlock on four addresses", v1alpha1.DistributedLockSpec{Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeRedlock, Addresses: append(three, "d:1")}},
			"Redlock needs an odd number (3, 5, 7...) of independent nodes, found 4"},
		{"redlock without addresses", v1alpha1.DistributedLockSpec{Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeRedlock}},
			"found 0"},
		{"renewal at the bound", withRenewal(30*time.Second, 14849*time.Millisecond), ""},
		{"renewal at the bound, default ttl", withRenewal(0, 14849*time.Millisecond), ""},
		{"default renewal", withRenewal(30*time.Second, 0), ""},
		{"renewal just past the bound", withRenewal(30*time.Second, 14850*time.Millisecond),
			"spec.renewInterval 14.85s must leave room for a renewal inside the lease: 2 × renewInterval ≤ 0.99 × ttl − 2ms, at most 14.849s for ttl 30s"},
		{"renewal of 15s, default ttl", withRenewal(0, 15*time.Second), "at most 14.849s for ttl 30s"},
		{"renewal shorter than ttl, as the old rule had it", withRenewal(10*time.Second, 9*time.Second), "at most 4.949s for ttl 10s"},
		{"shortest ttl", withRenewal(100*time.Millisecond, 49*time.Millisecond), "at most 48.5ms for ttl 100ms"},
	} {
		got := specProblem(&c.spec)
		if (got == "") != (c.want == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: specProblem = %q, want %q", c.name, got, c.want)
		}
	}
}

// withRenewal is a Standalone spec with ttl (0: absent) and renewInterval
// (0: absent).
func withRenewal(ttl, renew time.Duration) v1alpha1.DistributedLockSpec {
	s := v1alpha1.DistributedLockSpec{Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{"a:1"}}}
	if ttl > 0 {
		s.TTL = &metav1.Duration{Duration: ttl}
	}
	if renew > 0 {
		s.RenewInterval = &metav1.Duration{Duration: renew}
	}
	return s
}
