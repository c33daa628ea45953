package lock_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// ran is how many times srv ran each of cmds (INFO commandstats).
func ran(t *testing.T, srv *redistest.Server, cmds ...string) int {
	t.Helper()
	info, err := srv.Info(t.Context(), "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, cmd := range cmds {
		n += calls(info["cmdstat_"+cmd])
	}
	return n
}

// A Locker (FunctionsAuto) calls the library's functions where the server
// has the library, and scripts where it does not: a restart-empty wipes
// the library, and the Locker carries on with scripts, without an error.
func TestALockerCallsTheLibraryWhereTheServerHasIt(t *testing.T) {
	srv, admin := startRedis(t)
	ctx := ctxTimeout(t, 20*time.Second)
	if err := protocol.LoadLibrary(ctx, admin); err != nil {
		t.Fatal(err)
	}
	l := newLocker(t, srv.Client(t), lock.WithTTL(5*time.Second))
	for range 3 {
		lease, err := l.TryAcquire(ctx, "fn")
		if err != nil {
			t.Fatal(err)
		}
		if err := lease.Renew(ctx); err != nil {
			t.Fatal(err)
		}
		if err := lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n, evals := ran(t, srv, "fcall"), ran(t, srv, "evalsha", "eval"); n != 9 || evals != 0 {
		t.Fatalf("3 acquisitions, renewals and releases made %d FCALLs and %d scripts; want 9 and 0", n, evals)
	}

	if err := srv.RestartEmpty(); err != nil {
		t.Fatal(err)
	}
	lease, err := l.TryAcquire(ctx, "fn")
	if err != nil {
		t.Fatalf("after the server lost the library: %v", err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if ran(t, srv, "eval", "evalsha") == 0 {
		t.Fatal("no script ran after the library was gone")
	}
}

// A caller that may run only the library's functions (a tenant of a store
// that refuses scripts) waits while the library is missing — the
// controller loads it — and acquires once it is there; a single attempt
// fails with ErrLibraryMissing.
func TestAFunctionsOnlyCallerWaitsForTheLibrary(t *testing.T) {
	srv, admin := startRedis(t)
	ctx := ctxTimeout(t, 20*time.Second)
	if err := admin.Do(ctx, "acl", "setuser", "fn-only", "on", ">pw", "~*", "&*", "+@all", "-eval", "-evalsha", "-script", "-function").Err(); err != nil {
		t.Fatal(err)
	}
	tenant := srv.Client(t, func(o *redis.Options) { o.Username, o.Password = "fn-only", "pw" })
	l := newLocker(t, tenant, lock.WithTTL(5*time.Second))
	if _, err := l.TryAcquire(ctx, "fn"); !errors.Is(err, lock.ErrLibraryMissing) {
		t.Fatalf("TryAcquire without the library = %v, want ErrLibraryMissing", err)
	}
	got := make(chan error, 1)
	go func() {
		lease, err := l.Acquire(ctx, "fn")
		if err == nil {
			err = lease.Release(ctx)
		}
		got <- err
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-got:
		t.Fatalf("Acquire returned before the library was loaded: %v", err)
	default:
	}
	if err := protocol.LoadLibrary(ctx, admin); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("Acquire once the library was loaded: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Acquire did not take the lock within 5 s of the library's loading")
	}
}

// With FunctionsLoad a Locker loads the library where it is missing (its
// user may FUNCTION LOAD) and then calls it: the first acquisition finds
// no function, loads the library, and every call after it is an FCALL.
func TestFunctionsLoadLoadsTheLibraryWhereItIsMissing(t *testing.T) {
	srv, admin := startRedis(t)
	ctx := ctxTimeout(t, 10*time.Second)
	l := newLocker(t, srv.Client(t), lock.WithFunctions(lock.FunctionsLoad))
	lease, err := l.TryAcquire(ctx, "load")
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	libs, err := admin.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: protocol.LibraryName}).Result()
	if err != nil || len(libs) != 1 {
		t.Fatalf("libraries named %s after the first acquisition: %v, %v; want the one the Locker loaded", protocol.LibraryName, libs, err)
	}
	if n, evals := ran(t, srv, "fcall"), ran(t, srv, "evalsha", "eval"); n != 3 || evals != 0 {
		t.Fatalf("an acquisition that loaded the library and a release made %d FCALLs and %d scripts; want 3 (the missing function, again once loaded, the release) and 0", n, evals)
	}
}

// On Redis Cluster, FunctionsLoad loads the library on every master: a
// FUNCTION LOAD sent through a ClusterClient reaches one node only, and
// the keys of the other masters' slots then found neither the function
// nor, FunctionsLoad calling functions only, a script to fall back on.
func TestFunctionsLoadLoadsTheLibraryOnEveryClusterMaster(t *testing.T) {
	cluster := redistest.StartCluster(t)
	ctx := ctxTimeout(t, 30*time.Second)
	client := cluster.Client(t)
	l := newLocker(t, client, lock.WithFunctions(lock.FunctionsLoad))
	for _, key := range []string{"a", "b", "orders/42", "jobs{nightly}", "z", "billing/settle", "k7", "k8"} {
		lease, err := l.TryAcquire(ctx, key)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if err := lease.Release(ctx); err != nil {
			t.Fatalf("%s: release: %v", key, err)
		}
	}
	var masters atomic.Int32 // ForEachMaster calls fn concurrently
	err := client.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		masters.Add(1)
		libs, err := m.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: protocol.LibraryName}).Result()
		if err != nil {
			return err
		}
		if len(libs) != 1 {
			return fmt.Errorf("master %s has %d libraries named %s; want 1", m.Options().Addr, len(libs), protocol.LibraryName)
		}
		return nil
	})
	if err != nil || masters.Load() < 2 {
		t.Fatalf("libraries on %d masters: %v", masters.Load(), err)
	}
}
