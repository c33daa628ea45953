package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/pkg/lock"
)

// The lock family (issue 44) beside the lock: a shared hold against an
// exclusive one, several keys taken all or none against the same keys
// taken one by one, and a writer among readers. No Go peer has a shared
// lock or a multi-key lock in a tagged release (bsm/redislock v0.9.4 has
// no ObtainMulti, redsync has neither), so the peers appear only as
// one-by-one rows: what their users write instead.

// The names of the lock family's redlease rows: reports read them
// against each other.
const (
	ExclusiveName = "redlease (exclusive)"   // SharedLibs: what the shared hold is read against
	SharedName    = "redlease (shared)"      // SharedLibs
	AllName       = "redlease TryAcquireAll" // KeysLibs
	OneByOneName  = "redlease one by one"    // KeysLibs: what the others are read against
)

// familyOptions are every lock family row's: those of UncontendedLibs'
// "redlease" row (fencing on, the default; scripts), so that the exclusive
// row here reads as that one.
func familyOptions(ttl time.Duration) []lock.Option {
	return redleaseOptions(ttl, true, lock.FunctionsOff)
}

// SharedLibs are the exclusive cycle (Acquire + Release) and the shared
// one (AcquireShared + Release), each on a Locker and client of its own.
func SharedLibs(newClient func() *redis.Client, ttl time.Duration) ([]*Lib, error) {
	var libs []*Lib
	for _, row := range []struct {
		name, tuning string
		cycle        func(*lock.Locker) LockFunc
	}{
		{ExclusiveName, "Acquire + Release; fencing on, scripts: the uncontended \"redlease\" row", redleaseLock},
		{SharedName, "AcquireShared + Release; the same options",
			func(l *lock.Locker) LockFunc { return leaseLock(l.AcquireShared) }},
	} {
		l, err := newRedleaseCycle(row.name, row.tuning, row.cycle, newClient(), familyOptions(ttl)...)
		if err != nil {
			CloseAll(libs)
			return nil, err
		}
		libs = append(libs, l)
	}
	return libs, nil
}

// KeysLibs take n keys of one hash tag a cycle (keysOf): redlease all or
// none in one script (TryAcquireAll), then redlease, redislock and redsync
// one by one. The peers run with their defaults, as UncontendedLibs' do.
func KeysLibs(newClient func() *redis.Client, ttl time.Duration, n int) ([]*Lib, error) {
	all, err := newRedleaseCycle(AllName, fmt.Sprintf("TryAcquireAll of the %d keys + MultiLease.Release: one script each way; options as the exclusive row's", n),
		tryAll(n), newClient(), familyOptions(ttl)...)
	if err != nil {
		return nil, err
	}
	one, err := newRedleaseCycle(OneByOneName, "", func(l *lock.Locker) LockFunc { return leaseLock(l.TryAcquire) }, newClient(), familyOptions(ttl)...)
	if err != nil {
		all.Close()
		return nil, err
	}
	return []*Lib{
		all,
		oneByOne(one, n, OneByOneName, "TryAcquire each key in sorted order, then Release each; the same options"),
		oneByOne(NewRedislock("redislock", "", newClient(), ttl, nil), n, "redislock one by one", "Obtain each key in sorted order, then Release each; defaults"),
		oneByOne(NewRedsync("redsync", "", []*redis.Client{newClient()}, ttl), n, "redsync one by one", "a Mutex per key, Lock in sorted order, then Unlock each; defaults"),
	}, nil
}

// WriterLibs are the two sides of WriterAmongReaders: readers, a Locker
// and a client of its own per reader, as separate pods would have, taking
// the key shared; and the writer, one more of each, taking it exclusively.
func WriterLibs(newClient func() *redis.Client, ttl time.Duration) (readers, writer *Lib, err error) {
	readers, err = redleasePerWorker("redlease readers", "a Locker and client per reader, AcquireShared + Release",
		func() redis.UniversalClient { return newClient() }, func(l *lock.Locker) LockFunc { return leaseLock(l.AcquireShared) }, familyOptions(ttl)...)
	if err != nil {
		return nil, nil, err
	}
	writer, err = NewRedlease("redlease", "the writer: a Locker and client of its own, Acquire + Release; the readers: one each, AcquireShared + Release",
		newClient(), familyOptions(ttl)...)
	if err != nil {
		readers.Close()
		return nil, nil, err
	}
	return readers, writer, nil
}

// tryAll takes a cycle's n keys with one TryAcquireAll.
func tryAll(n int) func(*lock.Locker) LockFunc {
	return func(l *lock.Locker) LockFunc {
		return func(ctx context.Context, key string) (Release, error) {
			m, err := l.TryAcquireAll(ctx, keysOf(key, n)...)
			if err != nil {
				return nil, err
			}
			return m.Release, nil
		}
	}
}

// keysOf are the n keys a multi-key cycle on key takes, {key}:0 to
// {key}:n-1, sorted: one hash tag, so that TryAcquireAll could take them
// on a Redis Cluster too, and every row takes the same keys.
func keysOf(key string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "{" + key + "}:" + strconv.Itoa(i)
	}
	slices.Sort(keys) // {k}:10 sorts before {k}:2
	return keys
}

// oneByOne is lib taking a cycle's n keys (keysOf) one after the other, in
// sorted order, the order that keeps callers of overlapping sets from
// deadlocking, and releasing them in the same order: what a caller without
// a multi-key lock does. A failed take gives back the keys already taken,
// even when it failed because ctx ended.
func oneByOne(lib *Lib, n int, name, tuning string) *Lib {
	l := &Lib{Name: name, Family: lib.Family, Tuning: tuning}
	l.worker = func(i int) LockFunc {
		lockf := lib.Worker(i)
		return func(ctx context.Context, key string) (Release, error) {
			releases := make([]Release, 0, n)
			release := func(ctx context.Context) error {
				var errs []error
				for _, r := range releases {
					errs = append(errs, r(ctx))
				}
				return errors.Join(errs...)
			}
			for _, k := range keysOf(key, n) {
				r, err := lockf(ctx, k)
				if err != nil {
					return nil, errors.Join(err, release(context.WithoutCancel(ctx)))
				}
				releases = append(releases, r)
			}
			return release, nil
		}
	}
	l.onClose(lib.Close)
	return l
}
