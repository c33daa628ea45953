package bench

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestFencedFloorFencesEachGrant: against a real redis-server, every grant
// of the fenced floor's script gets the next fence, and an attempt on a
// held key fails without spending one.
func TestFencedFloorFencesEachGrant(t *testing.T) {
	ctx := t.Context()
	c := clients(t, singleServer(t))()[0]
	conn := c.Conn()
	defer func() { _ = conn.Close() }()
	key := "test:fenced-floor:grants"
	if err := c.Del(ctx, key, fenceKey(key)).Err(); err != nil {
		t.Fatal(err)
	}
	var fences []int64
	for i := range 3 {
		v := "holder-" + strconv.Itoa(i)
		f, err := fencedAcquire(ctx, conn, key, v, time.Minute)
		if err != nil {
			t.Fatalf("acquire %d: %v", i, err)
		}
		if _, err := fencedAcquire(ctx, conn, key, "another", time.Minute); !errors.Is(err, errHeld) {
			t.Fatalf("acquire of a held key: %v, want errHeld", err)
		}
		if err := floorRelease(ctx, conn, key, v); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
		fences = append(fences, f)
	}
	if want := []int64{1, 2, 3}; !slices.Equal(fences, want) {
		t.Errorf("fences %v, want %v (increasing by one: a failed attempt spends none)", fences, want)
	}
	if n := c.Exists(ctx, key).Val(); n != 0 {
		t.Error("the key is still there after its holder's release")
	}
}

// TestFencedFloorReleasesOnlyItsOwn: the fenced floor's Lib releases the
// key only while it still holds the value it set, as a lock whose lease
// expired and went to someone else must.
func TestFencedFloorReleasesOnlyItsOwn(t *testing.T) {
	ctx := t.Context()
	c := clients(t, singleServer(t))()[0]
	lib := NewFencedFloor(c, time.Minute)
	defer lib.Close()
	key := "test:fenced-floor:owner"
	if err := c.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	release, err := lib.Worker(0)(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lib.Worker(1)(ctx, key); !errors.Is(err, errHeld) {
		t.Fatalf("a second worker's acquire of the held key: %v, want errHeld", err)
	}
	// The lease ran out and someone else took the key.
	if err := c.Set(ctx, key, "someone-else", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := release(ctx); err == nil {
		t.Error("the old holder's release succeeded on a key it no longer held")
	}
	if v := c.Get(ctx, key).Val(); v != "someone-else" {
		t.Errorf("after the old holder's release the key holds %q, want the new holder's value", v)
	}
}

// TestCommandTimeCountsWhatClientsSent: on a real redis-server, a floor's
// server command time is its sent calls' time (a bare SET and the
// release script for the raw floor, two scripts for the fenced floor), and
// neither the commands those scripts run nor the measuring INFO add to it.
func TestCommandTimeCountsWhatClientsSent(t *testing.T) {
	srv := singleServer(t)
	admin := clients(t, srv)()[0]
	var sent Sent
	c := sent.Watch(clients(t, srv)()[0])
	const cycles = 50
	for _, tc := range []struct {
		lib      *Lib
		sent     Counts   // per run of cycles
		nested   []string // commands only scripts ran
		billable []string // the commands whose time is the row's
	}{
		{NewFloor(c, time.Minute), Counts{"set": cycles, "evalsha": cycles}, []string{"get", "del"}, []string{"set", "evalsha"}},
		{NewFencedFloor(c, time.Minute), Counts{"evalsha": 2 * cycles}, []string{"set", "incr", "get", "del"}, []string{"evalsha"}},
	} {
		t.Run(tc.lib.Name, func(t *testing.T) {
			defer tc.lib.Close()
			lockf := tc.lib.Worker(0)
			key := keyName("test:command-time:", tc.lib.Name)
			cycle(t, lockf, key, 1) // loads the scripts (EVALSHA, NOSCRIPT, EVAL) before the measured part
			s0 := sent.Counts()
			l0 := serverLoad(t, srv, admin)
			cycle(t, lockf, key, cycles)
			load := serverLoad(t, srv, admin).Sub(l0)
			load.Sent = sent.Counts().Sub(s0)
			checkCommandTime(t, load, tc.sent, tc.nested, tc.billable)
		})
	}
}

// checkCommandTime checks that load sent want, that the nested commands
// ran (cycles times) though no client sent them, and that the command time
// is the billable commands' usec.
func checkCommandTime(t *testing.T, load Load, want Counts, nested, billable []string) {
	t.Helper()
	got := Counts{}
	for k, v := range load.Sent {
		if v != 0 {
			got[k] = v
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("sent %v, want %v", got, want)
	}
	for _, name := range nested {
		if load.Stats[name].Calls == 0 || load.Sent[name] != 0 {
			t.Errorf("%s: %d calls on the server, %d sent; want calls that only scripts made", name, load.Stats[name].Calls, load.Sent[name])
		}
	}
	var us int64
	for _, name := range billable {
		us += load.Stats[name].Usec
	}
	if got := load.CommandMicros(); got != float64(us) || got <= 0 {
		t.Errorf("command time %v µs, want %v µs (the usec of %v)", got, us, billable)
	}
}

func cycle(t *testing.T, lockf LockFunc, key string, n int) {
	t.Helper()
	for range n {
		release, err := lockf(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		if err := release(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

func serverLoad(t *testing.T, srv *Server, admin *redis.Client) Load {
	t.Helper()
	l, err := ServerLoad(context.Background(), []*Server{srv}, []*redis.Client{admin})
	if err != nil {
		t.Fatal(err)
	}
	return l
}
