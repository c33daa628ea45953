/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redistest"
)

// The replica guard's registry keys every request by the credentials the
// controller used and the run_id the server reported through them
// (DESIGN §10.1): a server that claims somebody else's run_id reaches only
// requests made with the same credentials.

// fakeRedis answers like a Redis master, as much as the controller's
// probe, guard, preflight and holder read need: PING, INFO (reporting the
// run_id it was given, role master), CONFIG GET/SET (kept in memory), GET
// (nil) and PTTL (-2); AUTH and SELECT are accepted. It records the CONFIG
// SETs it gets. It stands for an attacker's own server, which can claim
// any run_id it likes in INFO.
type fakeRedis struct {
	ln    net.Listener
	runID string
	// answer, when set, replies to the commands it knows (ok) in place
	// of the defaults: a hostile server's replies.
	answer func(args []string) (reply string, ok bool)

	mu     sync.Mutex
	config map[string]string
	sets   []string
	conns  sync.WaitGroup
	closed chan struct{}
	open   map[net.Conn]bool
}

func startFakeRedis(t *testing.T, runID string) *fakeRedis {
	t.Helper()
	return startHostileRedis(t, runID, nil)
}

// startHostileRedis is a fakeRedis that answers with answer first.
func startHostileRedis(t testing.TB, runID string, answer func(args []string) (string, bool)) *fakeRedis {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRedis{
		ln: ln, runID: runID, answer: answer, closed: make(chan struct{}), open: map[net.Conn]bool{},
		config: map[string]string{"min-replicas-to-write": "0", "min-replicas-max-lag": "10", "save": "3600 1"},
	}
	go f.accept()
	t.Cleanup(f.close)
	return f
}

func (f *fakeRedis) Addr() string { return f.ln.Addr().String() }

// configSets are the CONFIG SETs received, as "name value".
func (f *fakeRedis) configSets() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.sets...)
}

func (f *fakeRedis) close() {
	close(f.closed)
	_ = f.ln.Close()
	f.mu.Lock()
	for c := range f.open {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.conns.Wait()
}

func (f *fakeRedis) accept() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		select {
		case <-f.closed:
			f.mu.Unlock()
			_ = c.Close()
			return
		default:
		}
		f.open[c] = true
		f.conns.Add(1)
		f.mu.Unlock()
		go f.serve(c)
	}
}

func (f *fakeRedis) serve(c net.Conn) {
	defer f.conns.Done()
	defer func() {
		f.mu.Lock()
		delete(f.open, c)
		f.mu.Unlock()
		_ = c.Close()
	}()
	r := bufio.NewReader(c)
	for {
		args, err := readCommand(r)
		if err != nil {
			return
		}
		if _, err := io.WriteString(c, f.reply(args)); err != nil {
			return
		}
	}
}

// readCommand reads one RESP array of bulk strings (what clients send).
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimRight(line, "\r\n")
	if !strings.HasPrefix(line, "*") {
		return strings.Fields(line), nil // an inline command
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil {
		return nil, err
	}
	args := make([]string, 0, n)
	for range n {
		head, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimRight(head, "\r\n")[1:])
		if err != nil {
			return nil, err
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args = append(args, string(buf[:size]))
	}
	return args, nil
}

func bulk(s string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }

func (f *fakeRedis) reply(args []string) string {
	if len(args) == 0 {
		return "-ERR empty command\r\n"
	}
	if f.answer != nil {
		if r, ok := f.answer(args); ok {
			return r
		}
	}
	switch cmd := strings.ToUpper(args[0]); {
	case cmd == "PING":
		return "+PONG\r\n"
	case cmd == "AUTH" || cmd == "SELECT":
		return "+OK\r\n"
	case cmd == "INFO":
		return bulk(strings.Join([]string{
			"# Server", "redis_version:7.0.15", "redis_mode:standalone", "run_id:" + f.runID,
			"# Clients", "connected_clients:1",
			"# Memory", "maxmemory_policy:noeviction",
			"# Persistence", "aof_enabled:1",
			"# Replication", "role:master", "connected_slaves:0",
			"master_replid:0123456789abcdef0123456789abcdef01234567", "",
		}, "\r\n"))
	case cmd == "CONFIG" && len(args) == 3 && strings.EqualFold(args[1], "GET"):
		f.mu.Lock()
		defer f.mu.Unlock()
		v, ok := f.config[strings.ToLower(args[2])]
		if !ok {
			return "*0\r\n"
		}
		return "*2\r\n" + bulk(args[2]) + bulk(v)
	case cmd == "CONFIG" && len(args) == 4 && strings.EqualFold(args[1], "SET"):
		f.mu.Lock()
		defer f.mu.Unlock()
		f.config[strings.ToLower(args[2])] = args[3]
		f.sets = append(f.sets, args[2]+" "+args[3])
		return "+OK\r\n"
	case cmd == "GET":
		return "$-1\r\n"
	case cmd == "PTTL":
		return ":-2\r\n"
	}
	return fmt.Sprintf("-ERR unknown command '%s'\r\n", args[0])
}

// victimPassword is the password of the victim's servers; the attacker
// does not know it.
const victimPassword = "victim-s3cret"

// guardSafety asks for min-replicas-to-write n (lag 10s), managed.
func guardSafety(n int32) *v1alpha1.SafetySpec {
	return &v1alpha1.SafetySpec{MinReplicasToWrite: n, MinReplicasMaxLag: &metav1.Duration{Duration: 10 * time.Second}, ManageReplicaSettings: true}
}

// TestGuardForgedRunID is the forged run_id attack. A victim (a LockStore,
// or an inline lock) guards a real replicated Redis with password P
// (min-replicas-to-write 1, managed). In another namespace an attacker
// (an inline lock, or a LockStore) points at a server of its own that
// claims the victim master's run_id in INFO and asks for
// min-replicas-to-write 100, managed. The attacker does not know P, so its
// request must not reach the victim's servers: the victim's master keeps 1
// over several probe intervals, drift made from outside is still repaired
// to 1, the victim stays Ready with its guard applied (no conflict that a
// forged run_id could raise), and neither the victim's status nor its
// Events name the attacker's namespace or object.
//
// Before commit ba11dad the registry keyed requests by run_id alone, and
// this attack set min-replicas-to-write 100 on the victim's real master
// (writes then fail: no master has 100 replicas). That was checked on a
// worktree of ba11dad~1 with an inline victim and an inline attacker (the
// only kinds there were) in one namespace, the same fake server, and the
// CRDs of today (ba11dad~1's own do not install: a messageExpression
// over the CEL cost budget): the master read 100 within seconds. Until
// cb983e0 an attacking LockStore still made an inline victim defer to it
// by run_id alone (drift no longer repaired), and a forged run_id raised
// SettingsConflict on the victims.
func TestGuardForgedRunID(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		victimStore bool // a LockStore, else an inline lock
		attackStore bool // a LockStore, else an inline lock
	}{
		{"LockStore victim, inline attacker", true, false},
		{"inline victim, inline attacker", false, false},
		{"inline victim, LockStore attacker", false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Sequential: each case has its own manager (its own guard
			// registry) and servers; in parallel they would crowd the
			// small machine.
			forgedRunIDCase(t, tc.victimStore, tc.attackStore)
		})
	}
}

func forgedRunIDCase(t *testing.T, victimStore, attackStore bool) {
	const probeInterval = time.Second
	h := newHarness(t, harnessOptions{namespaces: 1, probeInterval: probeInterval})
	group := redistest.StartReplicated(t, 1, redistest.WithPassword(victimPassword))
	master := group.Master
	ctx := h.ctx()
	admin := master.Client(t)
	h.createSecret("redis-password", map[string]string{"password": victimPassword})
	pw := &v1alpha1.SecretKeyRef{Name: "redis-password", Key: "password"}
	replicated := v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeReplicated, Addresses: []string{master.Addr(), group.Replicas[0].Addr()}}

	// The victim, in the harness's namespace.
	var victim client.Object
	victimKind, victimName := "LockStore", "victim"
	if victimStore {
		ls := &v1alpha1.LockStore{
			ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: victimName},
			Spec:       v1alpha1.LockStoreSpec{Redis: replicated, ControllerAuth: &v1alpha1.RedisAuth{PasswordSecretRef: pw}, Safety: guardSafety(1)},
		}
		if err := h.c.Create(ctx, ls); err != nil {
			t.Fatal(err)
		}
		victim = ls
		h.waitStore(ls, "Ready with the guard applied", func(st *v1alpha1.LockStoreStatus, gen int64) error {
			if err := storeReady(st, gen); err != nil {
				return err
			}
			return storeCondition(st, gen, v1alpha1.ConditionReplicationGuarded, metav1.ConditionTrue, v1alpha1.ReasonGuardApplied)
		})
	} else {
		victimKind = "DistributedLock"
		spec := v1alpha1.DistributedLockSpec{Redis: replicated, Safety: guardSafety(1)}
		spec.Redis.PasswordSecretRef = pw
		victim = h.create(victimName, spec)
		h.waitFor(victimName, "Ready with the guard applied", victimGuarded)
	}
	if tw, _, err := replicaSettings(ctx, admin); err != nil || tw != "1" {
		t.Fatalf("the victim's master has min-replicas-to-write %q (%v), want 1", tw, err)
	}
	info, err := master.Info(ctx, "server")
	if err != nil {
		t.Fatal(err)
	}
	fake := startFakeRedis(t, info["run_id"])

	// The attacker, in another namespace, without the password.
	attackNS, attackName := h.extra[0], "forger"
	attack := v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeReplicated, Addresses: []string{fake.Addr()}}
	if attackStore {
		ls := &v1alpha1.LockStore{
			ObjectMeta: metav1.ObjectMeta{Namespace: attackNS, Name: attackName},
			Spec:       v1alpha1.LockStoreSpec{Redis: attack, Safety: guardSafety(100)},
		}
		if err := h.c.Create(ctx, ls); err != nil {
			t.Fatal(err)
		}
		// Its guard phase ran: its request is in the registry.
		h.waitStore(ls, "the attacker's guard checked", func(st *v1alpha1.LockStoreStatus, gen int64) error {
			return storeCondition(st, gen, v1alpha1.ConditionReplicationGuarded, metav1.ConditionFalse, v1alpha1.ReasonReplicasInsufficient)
		})
	} else {
		h.createIn(attackNS, attackName, v1alpha1.DistributedLockSpec{Redis: attack, Safety: guardSafety(100)})
		h.waitForIn(attackNS, attackName, "the attacker's guard checked", func(dl *v1alpha1.DistributedLock) error {
			if c := condition(dl, v1alpha1.ConditionReplicationGuarded); c.Status == "" || c.Status == metav1.ConditionUnknown {
				return fmt.Errorf("ReplicationGuarded %s/%s: not checked yet", c.Status, c.Reason)
			}
			return nil
		})
	}
	// The attacker's request is live: the controller applies it, to the
	// attacker's own server only.
	h.eventually("the attacker's settings on its own server", func() error {
		if !slices.Contains(fake.configSets(), "min-replicas-to-write 100") {
			return fmt.Errorf("CONFIG SETs so far: %v", fake.configSets())
		}
		return nil
	})

	// Several probe intervals of both: the victim's master keeps 1.
	h.consistently("the victim's master keeps min-replicas-to-write 1", 4*probeInterval, masterKeeps(h, admin, "1"))
	// The victim still repairs its servers: the attacker cannot make it
	// leave them alone either.
	if err := admin.ConfigSet(ctx, "min-replicas-to-write", "0").Err(); err != nil {
		t.Fatal(err)
	}
	h.eventually("the victim repairs drift", masterKeeps(h, admin, "1"))

	// What the victim reports is its own business alone.
	if victimStore {
		ls := victim.(*v1alpha1.LockStore)
		h.waitStore(ls, "still Ready with its own guard", func(st *v1alpha1.LockStoreStatus, gen int64) error {
			if err := storeReady(st, gen); err != nil {
				return err
			}
			return storeCondition(st, gen, v1alpha1.ConditionReplicationGuarded, metav1.ConditionTrue, v1alpha1.ReasonGuardApplied)
		})
		if found := mentions(ls.Status, attackNS, attackName); len(found) > 0 {
			t.Errorf("the victim's status names %v: %+v", found, ls.Status)
		}
	} else {
		dl := h.waitFor(victimName, "still Ready with its own guard", victimGuarded)
		if found := mentions(dl.Status, attackNS, attackName); len(found) > 0 {
			t.Errorf("the victim's status names %v: %+v", found, dl.Status)
		}
	}
	for _, e := range h.eventsRegarding(h.ns, victimKind, victimName) {
		if found := mentions(e, attackNS, attackName); len(found) > 0 {
			t.Errorf("an Event of the victim names %v: %s %s: %s", found, e.Type, e.Reason, e.Note)
		}
		if e.Reason == v1alpha1.ReasonSettingsConflict {
			t.Errorf("the victim got a SettingsConflict Event from a forged run_id: %s", e.Note)
		}
	}
}

// victimGuarded is an inline victim that is Ready with its own guard.
func victimGuarded(dl *v1alpha1.DistributedLock) error {
	if err := isReady(dl); err != nil {
		return err
	}
	return hasCondition(dl, v1alpha1.ConditionReplicationGuarded, metav1.ConditionTrue, v1alpha1.ReasonGuardApplied)
}

// TestStoreGuardWinsOverInline: a LockStore manages min-replicas-to-write
// 1 on a replicated Redis; an inline lock of the same namespace, reaching
// the same servers with the same credentials, asks for 2. The store's
// settings win: the master keeps 1 (over several probe intervals, no
// flapping), the inline lock may not change them and reports
// ReplicationGuarded False GuardMissing (the store's 1 is weaker than its
// 2, guardInForce's deferTo) and so is not Ready, and the store reports
// SettingsConflict (True: its own guard is in force).
func TestStoreGuardWinsOverInline(t *testing.T) {
	t.Parallel()
	const probeInterval = time.Second
	h := newHarness(t, harnessOptions{probeInterval: probeInterval})
	group := redistest.StartReplicated(t, 2, redistest.WithPassword(victimPassword))
	master := group.Master
	ctx := h.ctx()
	admin := master.Client(t)
	h.createSecret("redis-password", map[string]string{"password": victimPassword})
	pw := &v1alpha1.SecretKeyRef{Name: "redis-password", Key: "password"}
	replicated := v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeReplicated, Addresses: []string{master.Addr()}}

	ls := &v1alpha1.LockStore{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "platform"},
		Spec:       v1alpha1.LockStoreSpec{Redis: replicated, ControllerAuth: &v1alpha1.RedisAuth{PasswordSecretRef: pw}, Safety: guardSafety(1)},
	}
	if err := h.c.Create(ctx, ls); err != nil {
		t.Fatal(err)
	}
	h.waitStore(ls, "the store's guard applied", func(st *v1alpha1.LockStoreStatus, gen int64) error {
		return storeCondition(st, gen, v1alpha1.ConditionReplicationGuarded, metav1.ConditionTrue, v1alpha1.ReasonGuardApplied)
	})

	spec := v1alpha1.DistributedLockSpec{Redis: replicated, Safety: guardSafety(2)}
	spec.Redis.PasswordSecretRef = pw
	h.create("greedy", spec)
	dl := h.waitFor("greedy", "GuardMissing: the store's settings win", func(dl *v1alpha1.DistributedLock) error {
		if err := hasCondition(dl, v1alpha1.ConditionReplicationGuarded, metav1.ConditionFalse, v1alpha1.ReasonGuardMissing); err != nil {
			return err
		}
		return notReadyBecause(v1alpha1.ReasonGuardMissing)(dl)
	})
	t.Logf("inline lock: %s", condition(dl, v1alpha1.ConditionReplicationGuarded).Message)
	h.waitStore(ls, "SettingsConflict", func(st *v1alpha1.LockStoreStatus, gen int64) error {
		if err := storeReady(st, gen); err != nil {
			return err
		}
		return storeCondition(st, gen, v1alpha1.ConditionReplicationGuarded, metav1.ConditionTrue, v1alpha1.ReasonSettingsConflict)
	})
	if c := meta.FindStatusCondition(ls.Status.Conditions, v1alpha1.ConditionReplicationGuarded); c != nil {
		t.Logf("store: %s", c.Message)
	}

	h.consistently("the master keeps the store's min-replicas-to-write 1", 4*probeInterval, masterKeeps(h, admin, "1"))
}

// masterKeeps checks that a master's min-replicas-to-write is want.
func masterKeeps(h *harness, admin *redis.Client, want string) func() error {
	return func() error {
		tw, _, err := replicaSettings(h.ctx(), admin)
		if err != nil {
			return err
		}
		if tw != want {
			return fmt.Errorf("min-replicas-to-write %q, want %s", tw, want)
		}
		return nil
	}
}
