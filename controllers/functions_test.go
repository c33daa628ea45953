/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// The tests of the function library on stores: the controller loads it on
// every master and again after a master lost it; tenants.scripts
// FunctionsOnly takes Lua of their own away from tenants, and a store
// whose servers have no functions keeps scripts.

// functionsOnlyStore is aclStandaloneStore with tenants.scripts
// FunctionsOnly.
func functionsOnlyStore(addr string) v1alpha1.ClusterLockStoreSpec {
	spec := aclStandaloneStore(addr)
	spec.Tenants.Scripts = v1alpha1.TenantScriptsFunctionsOnly
	return spec
}

// librariesLoaded is a Ready store with FunctionsLoaded True, every master
// of status.endpoints serving exactly the protocol's library.
func librariesLoaded(st *v1alpha1.LockStoreStatus, generation int64) error {
	if err := storeReady(st, generation); err != nil {
		return err
	}
	if err := storeCondition(st, generation, v1alpha1.ConditionFunctionsLoaded, metav1.ConditionTrue, v1alpha1.ReasonLibraryLoaded); err != nil {
		return err
	}
	masters := 0
	for _, e := range st.Endpoints {
		if e.Role != v1alpha1.EndpointRoleMaster {
			continue
		}
		masters++
		if !slices.Equal(e.Libraries, []string{protocol.LibraryName}) {
			return fmt.Errorf("master %s: status.endpoints[].libraries %v, want [%s]", e.Address, e.Libraries, protocol.LibraryName)
		}
	}
	if masters == 0 {
		return errors.New("no master in status.endpoints")
	}
	return nil
}

// serves reports whether srv's FUNCTION LIST holds the protocol's library.
func serves(ctx context.Context, c *redis.Client) error {
	libs, err := listLibraries(ctx, c)
	if err != nil {
		return err
	}
	if !slices.Contains(libs, protocol.LibraryName) {
		return fmt.Errorf("%s serves %v, not %s", c.Options().Addr, libs, protocol.LibraryName)
	}
	return nil
}

// ownLua is what a tenant would send to run Lua of its own, or to change
// what the server runs: all refused under FunctionsOnly.
func ownLua(c redis.UniversalClient) map[string]func(context.Context) error {
	const src = "return 1"
	return map[string]func(context.Context) error{
		"EVAL":        func(ctx context.Context) error { return c.Eval(ctx, src, nil).Err() },
		"EVALSHA":     func(ctx context.Context) error { return c.EvalSha(ctx, redis.NewScript(src).Hash(), nil).Err() },
		"SCRIPT LOAD": func(ctx context.Context) error { return c.ScriptLoad(ctx, src).Err() },
		"FUNCTION LOAD": func(ctx context.Context) error {
			return c.FunctionLoad(ctx, "#!lua name=mine\nredis.register_function('mine', function() return 1 end)").Err()
		},
	}
}

// refusesOwnLua is nil when c is refused (NOPERM) every command of ownLua.
func refusesOwnLua(ctx context.Context, c redis.UniversalClient) error {
	for what, run := range ownLua(c) {
		if err := run(ctx); !isNoPerm(err) {
			return fmt.Errorf("%s as the tenant: %w, want a NOPERM refusal", what, err)
		}
	}
	return nil
}

// TestAStoreLoadsTheLibraryAgainAfterARestartEmpty: a ClusterLockStore
// with tenants.scripts FunctionsOnly loads the library on its master
// (status.endpoints[].libraries, FunctionsLoaded True), and its tenant's
// user is refused EVAL, EVALSHA, SCRIPT LOAD and FUNCTION LOAD while a
// pod's Locker, on the tenant's credentials only, acquires through the
// functions. The master restarts empty (no library, no ACL users): the
// controller loads the library again (a LibraryLoaded Event) and
// re-provisions the user, and the same Locker acquires again; the time
// from the restart to that acquisition is logged.
func TestAStoreLoadsTheLibraryAgainAfterARestartEmpty(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{namespaces: 1})
	srv := redistest.StartStandalone(t)
	ns := h.extra[0]
	h.labelNamespace(ns, tenantLabel, "true")
	cs := h.createClusterStore("fn-restart", functionsOnlyStore(srv.Addr()))
	h.createIn(ns, "job", onStore(v1alpha1.StoreKindClusterLockStore, cs.Name, "job"))
	h.waitStore(cs, "Ready with the library loaded", librariesLoaded)
	h.waitStore(cs, "its tenant provisioned", storeProvisioned(1))
	dl := h.waitForIn(ns, "job", "Ready", readyOn(ns+"/job", v1alpha1.RedisModeStandalone, "redlease-"+cs.Name))
	ctx := h.ctx()
	admin := srv.Client(t)
	if err := serves(ctx, admin); err != nil {
		t.Fatal(err)
	}

	tenant := h.podClient(dl)
	if err := refusesOwnLua(ctx, tenant); err != nil {
		t.Error(err)
	}
	locker := newLocker(t, tenant, lock.WithIdentity("pod"), lock.WithTTL(5*time.Second))
	key := ns + "/job"
	lease, err := locker.TryAcquire(ctx, key)
	if err != nil {
		t.Fatalf("acquiring %s through the functions: %v", key, err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}

	restarted := time.Now()
	if err := srv.RestartEmpty(); err != nil {
		t.Fatal(err)
	}
	// As a pod does: Acquire, and again after an error (the tenant's user
	// is gone until the controller provisions it again; Acquire waits
	// out a missing library by itself).
	var took time.Duration
	for {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		lease, err = locker.Acquire(actx, key)
		cancel()
		if err == nil {
			took = time.Since(restarted)
			break
		}
		if time.Since(restarted) > waitTimeout {
			t.Fatalf("no acquisition within %v of the restart: %v", waitTimeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("from the restart-empty to acquiring again: %v (probe interval 1s)", took.Round(time.Millisecond))
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := serves(ctx, admin); err != nil {
		t.Errorf("after the restart: %v", err)
	}
	h.waitStore(cs, "the library in status again", librariesLoaded)
	h.eventually("a LibraryLoaded Event", func() error {
		for _, e := range h.eventsRegarding("default", "ClusterLockStore", cs.Name) {
			if e.Reason == v1alpha1.ReasonLibraryLoaded {
				return nil
			}
		}
		return errors.New("none yet")
	})
	if err := refusesOwnLua(ctx, tenant); err != nil {
		t.Errorf("after the restart: %v", err)
	}
}

// TestAMixedVersionUpgradeToFunctionsOnly: on a store on Scripts, two pods
// of one namespace share its one ACL user: an old release running the
// scripts (EVALSHA: lock.FunctionsOff) and a new one calling the
// functions. They contend for one key and never hold it together, and
// each acquires many times. Then the store switches to FunctionsOnly: the
// tenant is refused EVAL, EVALSHA, SCRIPT LOAD and FUNCTION LOAD, the new
// pod keeps acquiring and the old one is refused (why docs/upgrading.md
// says to switch only once every pod runs a release that calls
// functions).
func TestAMixedVersionUpgradeToFunctionsOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{namespaces: 1})
	srv := redistest.StartStandalone(t)
	ns := h.extra[0]
	h.labelNamespace(ns, tenantLabel, "true")
	cs := h.createClusterStore("fn-upgrade", aclStandaloneStore(srv.Addr()))
	h.createIn(ns, "job", onStore(v1alpha1.StoreKindClusterLockStore, cs.Name, "job"))
	h.waitStore(cs, "Ready with the library loaded", librariesLoaded)
	h.waitStore(cs, "its tenant provisioned", storeProvisioned(1))
	dl := h.waitForIn(ns, "job", "Ready", readyOn(ns+"/job", v1alpha1.RedisModeStandalone, "redlease-"+cs.Name))
	ctx := h.ctx()
	key := ns + "/job"

	tenant := h.podClient(dl)
	if err := tenant.Eval(ctx, "return 1", nil).Err(); err != nil {
		t.Fatalf("EVAL as a tenant of a store on Scripts: %v", err)
	}
	oldPod := newLocker(t, h.podClient(dl), lock.WithIdentity("old"), lock.WithTTL(5*time.Second), lock.WithFunctions(lock.FunctionsOff))
	newPod := newLocker(t, h.podClient(dl), lock.WithIdentity("new"), lock.WithTTL(5*time.Second))

	contend(ctx, t, key, map[string]*lock.Locker{"old (EVALSHA)": oldPod, "new (FCALL)": newPod})
	// The old pod runs no function; the new one nothing but.
	if n := fcallsOf(t, srv, func() { cycle(t, oldPod, key) }); n != 0 {
		t.Errorf("the old pod (FunctionsOff) made %d FCALLs", n)
	}
	if n := fcallsOf(t, srv, func() { cycle(t, newPod, key) }); n < 2 {
		t.Errorf("the new pod made %d FCALLs for an acquisition and a release, want 2", n)
	}

	var cur v1alpha1.ClusterLockStore
	if err := h.c.Get(ctx, client.ObjectKeyFromObject(cs), &cur); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.Tenants.Scripts = v1alpha1.TenantScriptsFunctionsOnly
	if err := h.c.Patch(ctx, &cur, patch); err != nil {
		t.Fatalf("switching the store to FunctionsOnly: %v", err)
	}
	h.eventually("the tenant refused Lua of its own", func() error { return refusesOwnLua(ctx, tenant) })
	h.waitStore(cs, "the switch observed", func(st *v1alpha1.LockStoreStatus, gen int64) error {
		if err := librariesLoaded(st, gen); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionTenantsProvisioned); c == nil || !strings.Contains(c.Message, "no Lua of their own") {
			return fmt.Errorf("TenantsProvisioned does not say the tenants run functions only: %+v", c)
		}
		return nil
	})
	for range 3 {
		cycle(t, newPod, key)
	}
	if lease, err := oldPod.TryAcquire(ctx, key); err == nil {
		_ = lease.Release(ctx)
		t.Error("the old pod (EVALSHA only) acquired under FunctionsOnly")
	} else {
		t.Logf("the old pod under FunctionsOnly, as expected: %v", err)
	}
}

// contend has the lockers take turns on key for 2 s, each holding it 2
// ms, and fails t if two ever hold it together or one acquires fewer than
// 5 times.
func contend(ctx context.Context, t *testing.T, key string, lockers map[string]*lock.Locker) {
	var inside, overlaps atomic.Int32
	acquired := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	deadline := time.Now().Add(2 * time.Second)
	for name, l := range lockers {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				actx, cancel := context.WithTimeout(ctx, 5*time.Second)
				lease, err := l.Acquire(actx, key)
				cancel()
				if err != nil {
					t.Errorf("%s: %v", name, err)
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				time.Sleep(2 * time.Millisecond)
				inside.Add(-1)
				if err := lease.Release(ctx); err != nil {
					t.Errorf("%s: releasing: %v", name, err)
					return
				}
				mu.Lock()
				acquired[name]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d times two of %v held %s together", n, acquired, key)
	}
	for name := range lockers {
		if acquired[name] < 5 {
			t.Errorf("acquisitions in 2s: %v; want at least 5 each", acquired)
		}
	}
	t.Logf("acquisitions in 2s on one key: %v", acquired)
}

// cycle acquires key with l at once and releases it.
func cycle(t *testing.T, l *lock.Locker, key string) {
	t.Helper()
	ctx := t.Context()
	lease, err := l.TryAcquire(ctx, key)
	if err != nil {
		t.Fatalf("acquiring %s: %v", key, err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatalf("releasing %s: %v", key, err)
	}
}

// fcallsOf is the FCALLs srv ran while run ran.
func fcallsOf(t *testing.T, srv *redistest.Server, run func()) int {
	t.Helper()
	count := func() int {
		info, err := srv.Info(t.Context(), "commandstats")
		if err != nil {
			t.Fatal(err)
		}
		return statCalls(info["cmdstat_fcall"])
	}
	before := count()
	run()
	return count() - before
}

// statCalls reads calls=N from an INFO commandstats line; 0 when absent.
func statCalls(line string) int {
	for field := range strings.SplitSeq(line, ",") {
		if v, ok := strings.CutPrefix(field, "calls="); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// TestAStoreWithoutFunctionsKeepsScripts: the controller's credentials may
// not run FUNCTION (as on a managed service that forbids it): the store
// says so (FunctionsLoaded False, FunctionsUnavailable, and a Warning
// Event) and stays Ready, and although it asks for FunctionsOnly its
// tenant keeps EVAL, so pods keep running the scripts. A server whose
// memory nears maxmemory turns Preflight False (MemoryNearLimit).
func TestAStoreWithoutFunctionsKeepsScripts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{namespaces: 1})
	srv := redistest.StartStandalone(t)
	ctx := h.ctx()
	admin := srv.Client(t)
	if err := admin.Do(ctx, "acl", "setuser", "operator", "on", ">operator-pw", "~*", "&*", "+@all", "-function").Err(); err != nil {
		t.Fatal(err)
	}
	h.createSecret("operator", map[string]string{"password": "operator-pw"})
	ns := h.extra[0]
	h.labelNamespace(ns, tenantLabel, "true")
	spec := functionsOnlyStore(srv.Addr())
	spec.ControllerAuth = &v1alpha1.RedisAuth{Username: "operator", PasswordSecretRef: &v1alpha1.SecretKeyRef{Namespace: h.ns, Name: "operator", Key: "password"}}
	cs := h.createClusterStore("fn-refused", spec)
	h.createIn(ns, "job", onStore(v1alpha1.StoreKindClusterLockStore, cs.Name, "job"))
	h.waitStore(cs, "FunctionsUnavailable", func(st *v1alpha1.LockStoreStatus, gen int64) error {
		if err := storeProvisioned(1)(st, gen); err != nil {
			return err
		}
		return storeCondition(st, gen, v1alpha1.ConditionFunctionsLoaded, metav1.ConditionFalse, v1alpha1.ReasonFunctionsUnavailable)
	})
	dl := h.waitForIn(ns, "job", "Ready", readyOn(ns+"/job", v1alpha1.RedisModeStandalone, "redlease-"+cs.Name))
	tenant := h.podClient(dl)
	if err := tenant.Eval(ctx, "return 1", nil).Err(); err != nil {
		t.Errorf("EVAL as the tenant of a store without functions: %v, want it allowed", err)
	}
	locker := newLocker(t, tenant, lock.WithIdentity("pod"), lock.WithTTL(5*time.Second))
	lease, err := locker.TryAcquire(ctx, ns+"/job")
	if err != nil {
		t.Fatalf("acquiring on a store without functions: %v", err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	h.eventually("a FunctionsUnavailable Event", func() error {
		for _, e := range h.eventsRegarding("default", "ClusterLockStore", cs.Name) {
			if e.Reason == v1alpha1.ReasonFunctionsUnavailable && e.Type == "Warning" {
				return nil
			}
		}
		return errors.New("none yet")
	})

	// Memory near the limit: maxmemory just above what the server uses,
	// set again while Preflight has not seen it (the server's use moves:
	// once it dropped more than 5 % and stayed under the 90 % line).
	nearLimit := func() {
		info, err := srv.Info(ctx, "memory")
		if err != nil {
			t.Fatal(err)
		}
		used, err := strconv.ParseInt(info["used_memory"], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if err := admin.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used*100/95, 10)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	nearLimit()
	t.Cleanup(func() { _ = admin.ConfigSet(context.Background(), "maxmemory", "0").Err() })
	h.waitStore(cs, "MemoryNearLimit", func(st *v1alpha1.LockStoreStatus, gen int64) error {
		err := storeCondition(st, gen, v1alpha1.ConditionPreflight, metav1.ConditionFalse, v1alpha1.ReasonMemoryNearLimit)
		if err != nil {
			nearLimit()
		}
		return err
	})
	if err := admin.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	h.waitStore(cs, "Preflight passed again", func(st *v1alpha1.LockStoreStatus, _ int64) error {
		c := metav1.Condition{}
		for _, x := range st.Conditions {
			if x.Type == v1alpha1.ConditionPreflight {
				c = x
			}
		}
		if c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Preflight %s/%s: %s", c.Status, c.Reason, c.Message)
		}
		return nil
	})
}

// TestLibraryNames: FUNCTION LIST's entries under RESP2 and RESP3, and
// what a server may answer that status cannot hold.
func TestLibraryNames(t *testing.T) {
	cases := []struct {
		entry any
		want  string
	}{
		{map[any]any{"library_name": "redlease_v3", "engine": "LUA"}, "redlease_v3"},
		{[]any{"library_name", "redlease_v2", "engine", "LUA"}, "redlease_v2"},
		{[]any{"engine"}, ""},
		{"redlease_v3", ""},
	}
	for _, tc := range cases {
		if got := libraryName(tc.entry); got != tc.want {
			t.Errorf("libraryName(%v) = %q, want %q", tc.entry, got, tc.want)
		}
	}
	for _, msg := range []string{"ERR unknown command 'FUNCTION'", "NOPERM User x has no permissions to run the 'function|list' command", "ERR unknown subcommand 'LIST'"} {
		if !functionsRefused(errors.New(msg)) {
			t.Errorf("%q is not read as functions refused", msg)
		}
	}
	if functionsRefused(errors.New("READONLY you can't write against a read only replica")) {
		t.Error("READONLY is read as functions refused: a failover would give tenants EVAL back")
	}
}
