package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/pkg/lock"
)

// The library sets each scenario compares. The runner and the testing.B
// benchmarks use the same ones. newClient returns a fresh client to the
// one server; every library gets its own, built with the same options.

// CloseAll closes every library in libs.
func CloseAll(libs []*Lib) {
	for _, l := range libs {
		l.Close()
	}
}

// UncontendedLibs is the raw floor, the fenced floor (NewFencedFloor: the
// goals of issue 45 are ratios to it), redlease with fencing on (its default)
// and off, run as scripts, and with fencing on as the library's functions,
// and the peers with their defaults. The script rows say FunctionsOff: by
// default a Locker calls the functions where the server has the library,
// which the functions row loads on the server they share, and deletes when
// it closes, so that the scenarios after it run as they would without it.
func UncontendedLibs(newClient func() *redis.Client, ttl time.Duration) ([]*Lib, error) {
	libs := []*Lib{NewFloor(newClient(), ttl), NewFencedFloor(newClient(), ttl)}
	for _, row := range []struct {
		name, tuning string
		fencing      bool
		functions    lock.Functions
	}{
		{"redlease", "fencing on (default), scripts (EVALSHA: the default where the server has no library)", true, lock.FunctionsOff},
		{"redlease (no fencing)", "WithFencing(false), scripts", false, lock.FunctionsOff},
		{"redlease (functions)", "fencing on, the library's functions (FCALL): WithFunctions(FunctionsLoad)", true, lock.FunctionsLoad},
	} {
		client := newClient()
		l, err := NewRedlease(row.name, row.tuning, client, redleaseOptions(ttl, row.fencing, row.functions)...)
		if err != nil {
			CloseAll(libs)
			return nil, err
		}
		if row.functions == lock.FunctionsLoad {
			l.onClose(func() { _ = client.FunctionDelete(context.Background(), protocol.LibraryName).Err() })
		}
		libs = append(libs, l)
	}
	return append(libs,
		NewRedsync("redsync", "defaults", []*redis.Client{newClient()}, ttl),
		NewRedislock("redislock", "defaults", newClient(), ttl, nil),
	), nil
}

// redleaseOptions are a redlease row's options: the TTL, fencing, and the
// Lua run as scripts or as the library's functions.
func redleaseOptions(ttl time.Duration, fencing bool, functions lock.Functions) []lock.Option {
	return []lock.Option{lock.WithTTL(ttl), lock.WithFencing(fencing), lock.WithFunctions(functions)}
}

// HandoffLibs is every configuration of the contended scenario. Libraries
// with a non-empty Variant are tunings of one peer; reports show the best
// of each variant group.
func HandoffLibs(newClient func() *redis.Client, ttl time.Duration) ([]*Lib, error) {
	var libs []*Lib
	opt := lock.WithTTL(ttl)
	for _, mk := range []func() (*Lib, error){
		func() (*Lib, error) {
			return NewRedlease("redlease", "one shared Locker, defaults (wakes on pub/sub)", newClient(), opt)
		},
		func() (*Lib, error) {
			return NewRedlease("redlease (backoff 1ms)", "WithRetryBackoff(1ms, 50ms)", newClient(), opt,
				lock.WithRetryBackoff(time.Millisecond, 50*time.Millisecond))
		},
		func() (*Lib, error) {
			return NewRedleasePerWorker("redlease (Locker per worker)", "a Locker per worker, as separate processes would have", newClient(), opt)
		},
	} {
		l, err := mk()
		if err != nil {
			CloseAll(libs)
			return nil, err
		}
		libs = append(libs, l)
	}
	libs = append(libs, NewRedsync("redsync", "defaults: 32 tries, delay 50–250ms; the caller retries on ErrFailed", []*redis.Client{newClient()}, ttl))
	for _, d := range []time.Duration{time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond} {
		l := NewRedsync(fmt.Sprintf("redsync (tuned, delay %v)", d), fmt.Sprintf("WithTries(1<<30), WithRetryDelay(%v)", d),
			[]*redis.Client{newClient()}, ttl, redsync.WithTries(1<<30), redsync.WithRetryDelay(d))
		l.Variant = "redsync tuned"
		libs = append(libs, l)
	}
	// redislock does not retry by default (NoRetry: Obtain fails at once);
	// its own example retries with LinearBackoff(100ms).
	libs = append(libs, NewRedislock("redislock", "LinearBackoff(100ms), as in its example (its default, NoRetry, fails at once)", newClient(), ttl,
		func() redislock.RetryStrategy { return redislock.LinearBackoff(100 * time.Millisecond) }))
	for _, d := range []time.Duration{time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond} {
		l := NewRedislock(fmt.Sprintf("redislock (tuned, linear %v)", d), fmt.Sprintf("LinearBackoff(%v)", d), newClient(), ttl,
			func() redislock.RetryStrategy { return redislock.LinearBackoff(d) })
		l.Variant = "redislock tuned"
		libs = append(libs, l)
	}
	l := NewRedislock("redislock (tuned, exponential 1-16ms)", "ExponentialBackoff(1ms, 16ms)", newClient(), ttl,
		func() redislock.RetryStrategy {
			return redislock.ExponentialBackoff(time.Millisecond, 16*time.Millisecond)
		})
	l.Variant = "redislock tuned"
	return append(libs, l), nil
}

// RedlockLibs is the floor, redlease's Redlock with fencing on and off, and
// redsync, each over one client per node (newClients returns a fresh set).
func RedlockLibs(newClients func() []*redis.Client, ttl time.Duration) ([]*Lib, error) {
	libs := []*Lib{NewFloorRedlock(newClients(), ttl)}
	for _, fencing := range []bool{true, false} {
		name, tuning := "redlease Redlock", "NewRedlock, fencing on (default): acquire, fence write-back, release"
		if !fencing {
			name, tuning = "redlease Redlock (no fencing)", "NewRedlock, WithFencing(false)"
		}
		var us []redis.UniversalClient
		for _, c := range newClients() {
			us = append(us, c)
		}
		l, err := NewRedlockRedlease(name, tuning, us, lock.WithTTL(ttl), lock.WithFencing(fencing))
		if err != nil {
			CloseAll(libs)
			return nil, err
		}
		libs = append(libs, l)
	}
	cs := newClients()
	return append(libs, NewRedsync("redsync", fmt.Sprintf("redsync.New with %d pools, defaults", len(cs)), cs, ttl)), nil
}
