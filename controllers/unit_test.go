package controllers

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/protocol"
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

	// The positive cases: once every lock was seen, the registry says so
	// (and loosening is allowed); dropping a wish does not unsee the lock,
	// forgetting it does.
	g.markSeen(c)
	if !g.allSeen([]types.NamespacedName{a, c}) {
		t.Errorf("a and c were both seen, allSeen says no")
	}
	if !g.allSeen(nil) {
		t.Errorf("allSeen of no locks = false, want true")
	}
	g.drop(c)
	if !g.allSeen([]types.NamespacedName{a, c}) {
		t.Errorf("drop(c) forgot that c was seen: only forget does")
	}
	if eff, others := g.effective("run2", c); eff != (redisprobe.ReplicaSettings{}) || len(others) != 0 {
		t.Errorf("after c dropped its wish, effective(run2, c) = %v, %v, want nothing", eff, others)
	}
	g.forget(c)
	if g.allSeen([]types.NamespacedName{a, c}) {
		t.Errorf("c was forgotten, allSeen still counts it as seen")
	}
}

// TestGuardRegistryMerges: wishes on one server merge field by field: the
// most replicas and the tightest (non-zero) lag, whichever locks they come
// from; every lock on that server gets the same result, and the ones that
// asked for something else are reported, sorted.
func TestGuardRegistryMerges(t *testing.T) {
	g := newGuardRegistry()
	a, b, c := types.NamespacedName{Name: "a"}, types.NamespacedName{Name: "b"}, types.NamespacedName{Name: "c"}
	s := func(w, l int) redisprobe.ReplicaSettings {
		return redisprobe.ReplicaSettings{MinReplicasToWrite: w, MinReplicasMaxLag: l}
	}
	d, e := types.NamespacedName{Namespace: "ns", Name: "d"}, types.NamespacedName{Namespace: "ns", Name: "e"}
	g.set(a, s(1, 10), []string{"run1"})
	g.set(b, s(3, 30), []string{"run1"})
	g.set(c, s(1, 5), []string{"run1", "run2"})
	g.set(d, s(1, 10), []string{"run1"}) // agrees with a
	g.set(e, s(2, 0), []string{"run2"})  // no lag bound of its own
	for _, tc := range []struct {
		runID  string
		self   types.NamespacedName
		eff    redisprobe.ReplicaSettings
		others []string
	}{
		{"run1", a, s(3, 5), []string{"/b", "/c"}}, // d wants what a wants: no conflict
		{"run1", d, s(3, 5), []string{"/b", "/c"}},
		{"run1", b, s(3, 5), []string{"/a", "/c", "ns/d"}},
		{"run1", c, s(3, 5), []string{"/a", "/b", "ns/d"}},
		{"run2", c, s(2, 5), []string{"ns/e"}}, // b's 3 replicas are on run1 only
		{"run2", e, s(2, 5), []string{"/c"}},   // e's unset lag takes c's
	} {
		eff, others := g.effective(tc.runID, tc.self)
		if eff != tc.eff || !slices.Equal(others, tc.others) {
			t.Errorf("effective(%s, %s) = %v, %v; want %v, %v", tc.runID, tc.self, eff, others, tc.eff, tc.others)
		}
	}
	// A new wish replaces the old one, servers included.
	g.set(b, s(1, 10), []string{"run2"})
	if eff, others := g.effective("run1", a); eff != s(1, 5) || !slices.Equal(others, []string{"/c"}) {
		t.Errorf("after b moved to run2 with a's settings: effective(run1, a) = %v, %v; want %v, [/c]", eff, others, s(1, 5))
	}
	if eff, others := g.effective("run2", b); eff != s(2, 5) || !slices.Equal(others, []string{"/c", "ns/e"}) {
		t.Errorf("effective(run2, b) = %v, %v; want %v, [/c ns/e]", eff, others, s(2, 5))
	}
	g.set(c, s(1, 10), []string{"run1"})
	g.set(b, s(1, 10), []string{"run1"})
	if eff, others := g.effective("run1", a); eff != s(1, 10) || len(others) != 0 {
		t.Errorf("a, b, c and d all want %v on run1: effective = %v, %v; want no conflict", s(1, 10), eff, others)
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

// TestElectHolder: on one server whoever's value is there holds the lock;
// on Redlock nodes only an identity on a quorum of them does.
func TestElectHolder(t *testing.T) {
	held := func(id string) holderRead { return holderRead{h: protocol.Holder{Held: true, Identity: id}} }
	free := holderRead{}
	long := strings.Repeat("x", maxIdentity+10)
	for _, c := range []struct {
		name     string
		reads    []holderRead
		need     int
		identity string
		held     bool
	}{
		{"free", []holderRead{free}, 1, "", false},
		{"held", []holderRead{held("pod-a")}, 1, "pod-a", true},
		{"a value this library did not write", []holderRead{held("")}, 1, unrecognizedHolder, true},
		{"an identity over the schema's bound", []holderRead{held(long)}, 1, long[:maxIdentity], true},
		{"redlock: a quorum", []holderRead{held("pod-a"), held("pod-a"), free}, 2, "pod-a", true},
		{"redlock: a minority", []holderRead{held("pod-a"), free, free}, 2, "", false},
		{"redlock: split, no quorum", []holderRead{held("pod-a"), held("pod-b"), free}, 2, "", false},
		{"two qualify: the smaller wins", []holderRead{held("pod-b"), held("pod-a")}, 1, "pod-a", true},
	} {
		identity, held := electHolder(c.reads, c.need)
		if identity != c.identity || held != c.held {
			t.Errorf("%s: electHolder = %q, %v; want %q, %v", c.name, identity, held, c.identity, c.held)
		}
	}
}

// TestHighestFence: the largest counter read, and whether any was read.
func TestHighestFence(t *testing.T) {
	fence := func(f uint64) holderRead { return holderRead{h: protocol.Holder{FenceSet: true, Fence: f}} }
	if f, seen := highestFence([]holderRead{{}, {}}); f != 0 || seen {
		t.Errorf("no counters: %d, %v", f, seen)
	}
	if f, seen := highestFence([]holderRead{fence(7), {}, fence(42), fence(3)}); f != 42 || !seen {
		t.Errorf("counters 7, 42, 3: %d, %v; want 42, true", f, seen)
	}
}

// TestNextHolder: the same identity keeps its since and takes a fence above
// the high-water mark (a new lease); another identity starts now.
func TestNextHolder(t *testing.T) {
	then, now := time.Unix(1000, 0), time.Unix(2000, 0)
	prev := &v1alpha1.LockHolder{Identity: "pod-a", Fence: 10, Since: metav1.NewTime(then)}
	for _, c := range []struct {
		name     string
		prev     *v1alpha1.LockHolder
		identity string
		fence    int64
		want     v1alpha1.LockHolder
	}{
		{"first holder", nil, "pod-a", 10, v1alpha1.LockHolder{Identity: "pod-a", Fence: 10, Since: metav1.NewTime(now)}},
		{"same holder renewing", prev, "pod-a", 10, *prev},
		{"same identity, a new lease", prev, "pod-a", 12, v1alpha1.LockHolder{Identity: "pod-a", Fence: 12, Since: metav1.NewTime(then)}},
		{"same identity, fence unknown", prev, "pod-a", 0, *prev},
		{"another holder", prev, "pod-b", 12, v1alpha1.LockHolder{Identity: "pod-b", Fence: 12, Since: metav1.NewTime(now)}},
	} {
		got := nextHolder(c.prev, c.identity, c.fence, 10, now)
		if *got != c.want {
			t.Errorf("%s: nextHolder = %+v, want %+v", c.name, *got, c.want)
		}
		if c.prev != nil && got == c.prev {
			t.Errorf("%s: nextHolder returned the previous holder itself, not a copy", c.name)
		}
	}
}

// TestReplicasNeeded: enough replicas for waitForReplicas and the requested
// guard, and for the guard in force when Redis enforces it, whose lag then
// counts.
func TestReplicasNeeded(t *testing.T) {
	s := func(w, l int) redisprobe.ReplicaSettings {
		return redisprobe.ReplicaSettings{MinReplicasToWrite: w, MinReplicasMaxLag: l}
	}
	for _, c := range []struct {
		name      string
		want      redisprobe.ReplicaSettings
		waitFor   int
		inForce   redisprobe.ReplicaSettings
		need, lag int
	}{
		{name: "waitForReplicas only", want: s(0, 10), waitFor: 2, need: 2, lag: 10},
		{name: "the requested guard", want: s(1, 10), inForce: s(1, 10), need: 1, lag: 10},
		{name: "waitForReplicas above the guard", want: s(1, 10), waitFor: 3, inForce: s(1, 10), need: 3, lag: 10},
		{name: "a stricter guard in force", want: s(1, 10), inForce: s(2, 5), need: 2, lag: 5},
		{name: "a guard Redis does not enforce", want: s(1, 10), inForce: s(4, 0), need: 1, lag: 10},
	} {
		need, lag := replicasNeeded(c.want, c.waitFor, c.inForce)
		if need != c.need || lag != c.lag {
			t.Errorf("%s: replicasNeeded = %d within %ds, want %d within %ds", c.name, need, lag, c.need, c.lag)
		}
	}
}

// TestGuardVerdict: the most important failure reason wins; conflicts
// alone still mean the guard is in force.
func TestGuardVerdict(t *testing.T) {
	want := redisprobe.ReplicaSettings{MinReplicasToWrite: 1, MinReplicasMaxLag: 10}
	var v guardVerdict
	if got := v.result(want, 0, "m:1"); got.status != metav1.ConditionTrue || got.reason != v1alpha1.ReasonGuardApplied || got.message != want.String()+" in force on m:1" {
		t.Errorf("no failures = %+v", got)
	}
	if got := v.result(redisprobe.ReplicaSettings{}, 2, "m:1"); got.reason != v1alpha1.ReasonGuardApplied || got.message != "2 replica(s) connected for waitForReplicas on m:1" {
		t.Errorf("waitForReplicas only = %+v", got)
	}
	v.conflicts = append(v.conflicts, "m:1: others")
	if got := v.result(want, 0, "m:1"); got.status != metav1.ConditionTrue || got.reason != v1alpha1.ReasonSettingsConflict {
		t.Errorf("a conflict = %+v", got)
	}
	v.fail(v1alpha1.ReasonReplicasInsufficient, "m:1 short")
	v.fail(v1alpha1.ReasonGuardMissing, "m:2 weak")
	v.fail(v1alpha1.ReasonReplicasInsufficient, "m:3 short")
	if got := v.result(want, 0, "m:1"); got.status != metav1.ConditionFalse || got.reason != v1alpha1.ReasonGuardMissing || got.message != "m:1 short; m:2 weak; m:3 short" {
		t.Errorf("failures = %+v, want GuardMissing with every failure", got)
	}
	v.fail(v1alpha1.ReasonConfigUnavailable, "m:4 no CONFIG")
	if got := v.result(want, 0, "m:1"); got.reason != v1alpha1.ReasonConfigUnavailable {
		t.Errorf("with CONFIG unavailable = %+v", got)
	}
}

// TestPickMaster: which server takes the lock's writes in each mode, and
// why there is none.
func TestPickMaster(t *testing.T) {
	master := func(addr, runID string) *endpoint {
		return &endpoint{addr: addr, probed: true, info: redisprobe.ServerInfo{Role: redisprobe.RoleMaster, RunID: runID}}
	}
	replica := func(addr string) *endpoint {
		return &endpoint{addr: addr, probed: true, info: redisprobe.ServerInfo{Role: redisprobe.RoleReplica, RunID: "rep-" + addr}}
	}
	down := func(addr string) *endpoint {
		return &endpoint{addr: addr, probed: true, err: errors.New("connection refused")}
	}
	m1, m2, r1, d1 := master("m1:6379", "run1"), master("m2:6379", "run2"), replica("r1:6379"), down("d1:6379")
	m1again := master("localhost:6379", "run1")
	find := func(eps ...*endpoint) func(string) *endpoint {
		return func(addr string) *endpoint {
			for _, e := range eps {
				if e.addr == addr {
					return e
				}
			}
			return nil
		}
	}
	shard := func(m string, healthy bool, lo, hi int) redisprobe.Shard {
		return redisprobe.Shard{Master: m, MasterHealthy: healthy, Slots: [][2]int{{lo, hi}}}
	}
	for _, c := range []struct {
		name    string
		pick    masterPick
		master  *endpoint
		addr    string
		masters []*endpoint
		reason  string
	}{
		{"standalone", pickStandalone(m1), m1, m1.addr, []*endpoint{m1}, ""},
		{"standalone, unreachable", pickStandalone(d1), nil, d1.addr, nil, v1alpha1.ReasonEndpointUnreachable},
		{"standalone, a replica", pickStandalone(r1), nil, r1.addr, nil, v1alpha1.ReasonMasterUnknown},
		{"replicated", pickReplicated([]*endpoint{r1, m1, d1}), m1, m1.addr, []*endpoint{m1}, ""},
		{"replicated, one master under two names", pickReplicated([]*endpoint{m1, m1again, r1}), m1, m1.addr, []*endpoint{m1}, ""},
		{"replicated, two masters", pickReplicated([]*endpoint{m1, m2}), nil, "", nil, v1alpha1.ReasonMasterUnknown},
		{"replicated, no master", pickReplicated([]*endpoint{r1}), nil, "", nil, v1alpha1.ReasonMasterUnknown},
		{"replicated, nothing answers", pickReplicated([]*endpoint{d1}), nil, "", nil, v1alpha1.ReasonEndpointUnreachable},
		{"sentinel", pickSentinel(m1.addr, m1), m1, m1.addr, []*endpoint{m1}, ""},
		{"sentinel, no master named", pickSentinel("", nil), nil, "", nil, v1alpha1.ReasonMasterUnknown},
		{"sentinel, master down", pickSentinel(d1.addr, d1), nil, d1.addr, nil, v1alpha1.ReasonEndpointUnreachable},
		{"sentinel, a failover in progress", pickSentinel(r1.addr, r1), nil, r1.addr, nil, v1alpha1.ReasonMasterUnknown},
		{"cluster", pickCluster([]redisprobe.Shard{shard(m1.addr, true, 0, 8191), shard(m2.addr, true, 8192, 16383)}, 9000, find(m1, m2)),
			m2, m2.addr, []*endpoint{m1, m2}, ""},
		{"cluster, a failing master", pickCluster([]redisprobe.Shard{shard(m1.addr, true, 0, 8191), shard(m2.addr, false, 8192, 16383)}, 100, find(m1, m2)),
			m1, m1.addr, []*endpoint{m1}, v1alpha1.ReasonMasterUnknown},
		{"cluster, a shard without master", pickCluster([]redisprobe.Shard{shard(m1.addr, true, 0, 8191), shard("", false, 8192, 16383)}, 100, find(m1)),
			m1, m1.addr, []*endpoint{m1}, v1alpha1.ReasonMasterUnknown},
		{"cluster, a master down", pickCluster([]redisprobe.Shard{shard(d1.addr, true, 0, 16383)}, 100, find(d1)),
			nil, "", nil, v1alpha1.ReasonEndpointUnreachable},
		{"cluster, slot unknown", pickCluster([]redisprobe.Shard{shard(m1.addr, true, 0, 16383)}, -1, find(m1)),
			nil, "", []*endpoint{m1}, v1alpha1.ReasonMasterUnknown},
		{"cluster, slot not served", pickCluster([]redisprobe.Shard{shard(m1.addr, true, 0, 8191)}, 9000, find(m1)),
			nil, "", []*endpoint{m1}, v1alpha1.ReasonMasterUnknown},
		{"redlock", pickRedlock([]*endpoint{m1, d1, r1, m2}), nil, "", []*endpoint{m1, m2}, ""},
	} {
		p := c.pick
		if p.master != c.master || p.addr != c.addr || !slices.Equal(p.masters, c.masters) || p.reason != c.reason || (p.reason == "") != (p.message == "") {
			t.Errorf("%s: master %v, addr %q, masters %v, reason %q (%s); want %v, %q, %v, %q",
				c.name, p.master, p.addr, p.masters, p.reason, p.message, c.master, c.addr, c.masters, c.reason)
		}
	}
}
