package controllers

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/backoff"
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
	st := &backoff.Exponential{}
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

// TestGuardRegistry: requests merge only between requesters of one class
// (stores, or inline locks) that reach a server with the same credentials;
// an inline lock defers to a store on the same server (same credentials,
// same run_id); a server that claims another's run_id through other
// credentials reaches nobody's settings, holds nobody back and raises no
// conflict (the forged run_id attack).
func TestGuardRegistry(t *testing.T) {
	s := func(w, l int) redisprobe.ReplicaSettings {
		return redisprobe.ReplicaSettings{MinReplicasToWrite: w, MinReplicasMaxLag: l}
	}
	srv := func(creds, run string) guardServer { return guardServer{creds: creds, runID: run} }
	type wish struct {
		name string
		w    guardWish
	}
	cases := []struct {
		name   string
		wishes []wish
		self   string
		at     guardServer
		want   guardDecision
	}{
		{"alone", []wish{{"a", guardWish{settings: s(1, 10), servers: []guardServer{srv("k1", "run1")}}}},
			"a", srv("k1", "run1"), guardDecision{settings: s(1, 10)}},
		{"same credentials merge to the stricter", []wish{
			{"a", guardWish{settings: s(1, 10), servers: []guardServer{srv("k1", "run1")}}},
			{"b", guardWish{settings: s(2, 20), servers: []guardServer{srv("k1", "run1"), srv("k1", "run2")}}},
		}, "a", srv("k1", "run1"), guardDecision{settings: s(2, 10), others: 1}},
		{"forged run_id through other credentials does not merge", []wish{
			{"victim", guardWish{settings: s(1, 10), servers: []guardServer{srv("victim-creds", "run1")}}},
			{"attacker", guardWish{settings: s(100, 1), servers: []guardServer{srv("attacker-creds", "run1")}}},
		}, "victim", srv("victim-creds", "run1"), guardDecision{settings: s(1, 10)}},
		{"store wins over an inline lock", []wish{
			{"inline", guardWish{settings: s(3, 10), servers: []guardServer{srv("k1", "run1")}}},
			{"store", guardWish{settings: s(1, 10), servers: []guardServer{srv("k1", "run1")}, store: true}},
		}, "inline", srv("k1", "run1"), guardDecision{settings: s(1, 10), deferred: true, others: 1}},
		{"a store on a forged run_id holds no inline lock back", []wish{
			{"victim", guardWish{settings: s(1, 10), servers: []guardServer{srv("victim-creds", "run1")}}},
			{"attacker", guardWish{settings: s(100, 10), servers: []guardServer{srv("attacker-creds", "run1")}, store: true}},
		}, "victim", srv("victim-creds", "run1"), guardDecision{settings: s(1, 10)}},
		{"a store ignores inline wishes", []wish{
			{"inline", guardWish{settings: s(3, 10), servers: []guardServer{srv("k1", "run1")}}},
			{"store", guardWish{settings: s(1, 10), servers: []guardServer{srv("k1", "run1")}, store: true}},
		}, "store", srv("k1", "run1"), guardDecision{settings: s(1, 10), others: 1}},
		{"another server", []wish{
			{"a", guardWish{settings: s(1, 10), servers: []guardServer{srv("k1", "run1")}}},
			{"b", guardWish{settings: s(2, 20), servers: []guardServer{srv("k1", "run2")}}},
		}, "a", srv("k1", "run1"), guardDecision{settings: s(1, 10)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGuardRegistry()
			for _, w := range tc.wishes {
				g.set(w.name, w.w)
			}
			if got := g.effective(tc.at, tc.self); got != tc.want {
				t.Errorf("effective = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestGuardRegistrySeen: once every requester was seen, the registry says
// so (and loosening is allowed); dropping a wish does not unsee the
// requester, forgetting it does.
func TestGuardRegistrySeen(t *testing.T) {
	g := newGuardRegistry()
	g.set("a", guardWish{settings: redisprobe.ReplicaSettings{MinReplicasToWrite: 1, MinReplicasMaxLag: 10}})
	g.markSeen("a")
	if g.allSeen([]string{"a", "c"}) {
		t.Errorf("c was never seen")
	}
	g.markSeen("c")
	if !g.allSeen([]string{"a", "c"}) {
		t.Errorf("a and c were both seen, allSeen says no")
	}
	if !g.allSeen(nil) {
		t.Errorf("allSeen of no requesters = false, want true")
	}
	g.drop("c")
	if !g.allSeen([]string{"a", "c"}) {
		t.Errorf("drop(c) forgot that c was seen: only forget does")
	}
	g.forget("c")
	if g.allSeen([]string{"a", "c"}) {
		t.Errorf("c was forgotten, allSeen still counts it as seen")
	}
}

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
		{"FIFO on a Redlock store", v1alpha1.DistributedLockSpec{Fairness: v1alpha1.FairnessFIFO, Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeRedlock, Addresses: three}},
			"spec.fairness FIFO needs the waiting line, which Redlock does not have"},
		{"ticket order on a Redlock store", v1alpha1.DistributedLockSpec{LineOrder: v1alpha1.LineOrderTicket, Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeRedlock, Addresses: three}},
			"spec.lineOrder Ticket orders the waiting line, which Redlock does not have"},
		{"FIFO on standalone", v1alpha1.DistributedLockSpec{Fairness: v1alpha1.FairnessFIFO, Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{"a:1"}}}, ""},
		{"permits on a Redlock store", v1alpha1.DistributedLockSpec{Permits: 3, Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeRedlock, Addresses: three}},
			"spec.permits 3 needs one Redis deployment"},
		{"one permit on Redlock", v1alpha1.DistributedLockSpec{Permits: 1, Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeRedlock, Addresses: three}}, ""},
		{"permits on standalone", v1alpha1.DistributedLockSpec{Permits: 3, Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{"a:1"}}}, ""},
		{"renewal at the bound", withRenewal(30*time.Second, 14849*time.Millisecond), ""},
		{"renewal at the bound, default ttl", withRenewal(0, 14849*time.Millisecond), ""},
		{"default renewal", withRenewal(30*time.Second, 0), ""},
		{"renewal just past the bound", withRenewal(30*time.Second, 14850*time.Millisecond),
			"spec.renewInterval 14.85s must leave room for a renewal inside the lease: 2 × renewInterval ≤ 0.99 × ttl − 2ms, at most 14.849s for ttl 30s"},
		{"renewal of 15s, default ttl", withRenewal(0, 15*time.Second), "at most 14.849s for ttl 30s"},
		{"renewal shorter than ttl, as the old rule had it", withRenewal(10*time.Second, 9*time.Second), "at most 4.949s for ttl 10s"},
		{"shortest ttl", withRenewal(100*time.Millisecond, 49*time.Millisecond), "at most 48.5ms for ttl 100ms"},
	} {
		got := specProblem(&c.spec, &c.spec.Redis)
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
		{"cluster", pickCluster([]redisprobe.Shard{shard(m1.addr, true, 0, 8191), shard(m2.addr, true, 8192, 16383)}, 9000, true, find(m1, m2)),
			m2, m2.addr, []*endpoint{m1, m2}, ""},
		{"cluster, a failing master", pickCluster([]redisprobe.Shard{shard(m1.addr, true, 0, 8191), shard(m2.addr, false, 8192, 16383)}, 100, true, find(m1, m2)),
			m1, m1.addr, []*endpoint{m1}, v1alpha1.ReasonMasterUnknown},
		{"cluster, a shard without master", pickCluster([]redisprobe.Shard{shard(m1.addr, true, 0, 8191), shard("", false, 8192, 16383)}, 100, true, find(m1)),
			m1, m1.addr, []*endpoint{m1}, v1alpha1.ReasonMasterUnknown},
		{"cluster, a master down", pickCluster([]redisprobe.Shard{shard(d1.addr, true, 0, 16383)}, 100, true, find(d1)),
			nil, "", nil, v1alpha1.ReasonEndpointUnreachable},
		{"cluster, slot unknown", pickCluster([]redisprobe.Shard{shard(m1.addr, true, 0, 16383)}, -1, true, find(m1)),
			nil, "", []*endpoint{m1}, v1alpha1.ReasonMasterUnknown},
		{"cluster, slot not served", pickCluster([]redisprobe.Shard{shard(m1.addr, true, 0, 8191)}, 9000, true, find(m1)),
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
