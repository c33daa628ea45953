package protocol

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/acquire_all.lua
	acquireAllSrc string
	// acquireAllScript takes several lock keys, all or none (AcquireAllCall).
	acquireAllScript = newScript("acquire_all", false, acquireAllSrc, fenceSrc, lineSrc, epochSrc, sharedSrc, takenSrc, valueSrc)

	//go:embed lua/release_all.lua
	releaseAllSrc string
	// releaseAllScript gives them back, all at once (ReleaseAll).
	releaseAllScript = newScript("release_all", false, releaseAllSrc, fenceSrc, lineSrc, epochSrc, sharedSrc, valueSrc)
)

// MaxAllKeys bounds how many keys one all-or-nothing acquisition takes:
// the script checks and writes them all in one atomic run, during which
// the server serves nobody else.
const MaxAllKeys = 64

// allSuffixes and releaseAllSuffixes derive the keys each lock key brings
// to acquireAllScript and releaseAllScript after itself: three, and the
// epoch record last under a failover quarantine.
var (
	allSuffixes        = []string{fenceSuffix, lineSuffix, eventsSuffix, epochSuffix}
	releaseAllSuffixes = []string{eventsSuffix, lineSuffix, fenceSuffix, epochSuffix}
)

// suffixesFor are suffixes less the epoch record without a quarantine.
func suffixesFor(suffixes []string, q Quarantine) []string {
	if q.On {
		return suffixes
	}
	return suffixes[:len(suffixes)-1]
}

// AcquireAllCall is the call that takes every one of keys, or none, with
// a's Value, TTL, Fencing, Identity, Announce, FIFO, Sharded and
// Quarantine (no place in a line: AcquireAllWaitCall).
func AcquireAllCall(keys []string, a AcquireArgs) Call {
	return acquireAllCall(keys, a, false)
}

// AcquireAllWaitCall is AcquireAllCall for a caller that waits: with
// a.Place its failed attempt joins every key's line (a.Queued: it may be
// in them already) and keeps the keys reserved for it, with a.Window.
func AcquireAllWaitCall(keys []string, a AcquireArgs) Call {
	return acquireAllCall(keys, a, true)
}

func acquireAllCall(keys []string, a AcquireArgs, wait bool) Call {
	k := a.Constants
	args := append(make([]any, 0, 11+quarantineArgc), valueArg(a.Value, a.ValueArg), k.millis(a.TTL), flag(a.Fencing), k.str(a.Identity), flag(a.Announce),
		flag(a.FIFO), flag(a.Sharded))
	switch {
	case wait:
		args = append(args, k.millis(a.Place), flag(a.Queued), k.millis(a.Window))
	case a.Quarantine.On:
		args = append(args, "0", "0", "0") // not waiting: no place, no window
	}
	tickets := wait && a.Tickets // ARGV[13], after the quarantine's two
	if a.Quarantine.On || tickets {
		args = a.Quarantine.appendArgv(args)
	}
	if tickets {
		args = append(args, flagOn)
	}
	return Call{acquireAllScript, allKeys(keys, suffixesFor(allSuffixes, a.Quarantine)), args}
}

// AllAttempt is acquireAllScript's reply.
type AllAttempt struct {
	// Acquired: every key is the caller's; Fences are then theirs, in the
	// order of the keys (0 without fencing).
	Acquired bool
	Fences   []uint64
	// Held is, when not acquired, the index of the first key found not
	// free, and Wait its PTTL (-1 ms: no TTL; 0 when it is free but its
	// FIFO line is not).
	Held int
	Wait time.Duration
}

// ParseAllAttempt reads acquireAllScript's reply for n keys.
func ParseAllAttempt(cmd *redis.Cmd, n int) (AllAttempt, error) {
	res, err := cmd.Int64Slice()
	if err != nil {
		return AllAttempt{}, err
	}
	switch {
	case len(res) == n+1 && res[0] == 1:
		a := AllAttempt{Acquired: true, Fences: make([]uint64, n)}
		for i, f := range res[1:] {
			if f < 0 {
				return AllAttempt{}, fmt.Errorf("unexpected reply %v", res)
			}
			a.Fences[i] = uint64(f) //nolint:gosec // G115: f >= 0 is checked above
		}
		return a, nil
	case len(res) == 3 && res[0] == 0 && res[1] >= 1 && res[1] <= int64(n):
		wait := res[2]
		if wait == -2 { // free, its FIFO line not
			wait = 0
		}
		return AllAttempt{Held: int(res[1]) - 1, Wait: time.Duration(wait) * time.Millisecond}, nil
	}
	return AllAttempt{}, fmt.Errorf("unexpected reply %v", res)
}

// allKeys are the KEYS of a script over several lock keys: each key, then
// its keys derived with suffixes.
func allKeys(keys, suffixes []string) []string {
	ks := make([]string, 0, (1+len(suffixes))*len(keys))
	for _, k := range keys {
		ks = append(ks, scriptKeys(k, suffixes...)...)
	}
	return ks
}

// ReleaseAll gives back, at once, every one of keys that value (an
// AcquireAllCall's) still holds: each handed to the first waiter in its
// line (who has a.Window to confirm) or deleted. released says, per key,
// whether it was still value's. Under a.Quarantine, a key whose server
// changed is handed to nobody (a.TTL is the lock's).
func ReleaseAll(ctx context.Context, r Runner, keys []string, value string, a ReleaseArgs) (released []bool, err error) {
	k := a.Constants
	args := []any{value, k.millis(a.Window), flag(a.Announce), flag(a.Sharded)}
	if a.Quarantine.On {
		args = a.Quarantine.appendArgv(append(args, k.millis(a.TTL)))
	}
	res, err := r.Run(ctx, Call{releaseAllScript, allKeys(keys, suffixesFor(releaseAllSuffixes, a.Quarantine)), args}).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("release %q: %w", keys, err)
	}
	if len(res) != len(keys) {
		return nil, fmt.Errorf("release %q: unexpected reply %v", keys, res)
	}
	released = make([]bool, len(keys))
	for i, n := range res {
		released[i] = n == 1
	}
	return released, nil
}
