package protocol

import (
	"context"
	_ "embed"
	"fmt"
	"time"
)

// Shared holds (protocol 7): any number of shared holders of a lock key,
// or its one exclusive holder, never both. A key held shared is a sorted
// set of the holders' values scored by expiry, as a semaphore's, with a
// half millisecond more that marks the kind; its waiters queue in the
// lock's line, scored by arrival with a half µs more (lua/shared.lua).
var (
	//go:embed lua/shared_acquire.lua
	sharedAcquireSrc string
	// AcquireSharedScript: KEYS AcquireSharedKeys; ARGV AcquireArgs.Argv
	// (all of it). Replies as AcquireScript, the fence being the counter
	// as the grant found it.
	AcquireSharedScript = sentOnly(newScript("shared_acquire", false, sharedAcquireSrc, fenceSrc, lineSrc, epochSrc, sharedSrc, permitsSrc, takenSrc))

	//go:embed lua/shared_release.lua
	sharedReleaseSrc    string
	releaseSharedScript = newScript("shared_release", false, sharedReleaseSrc, fenceSrc, lineSrc, epochSrc, sharedSrc, permitsSrc)

	//go:embed lua/shared_renew.lua
	sharedRenewSrc string
	// RenewSharedScript: KEYS RenewPermitKeys; ARGV RenewArgv. Replies 1
	// when extended, 0 when the value no longer held the key shared.
	RenewSharedScript = newScript("shared_renew", false, sharedRenewSrc, epochSrc, sharedSrc)
)

// sharedSuffixes derive KEYS[2] on of the shared acquire and release from
// the lock key: the lock's (acquire's order, release's order), then the
// holders.
var (
	sharedAcquireSuffixes = []string{fenceSuffix, eventsSuffix, lineSuffix, epochSuffix, holdersSuffix}
	sharedReleaseSuffixes = []string{eventsSuffix, lineSuffix, fenceSuffix, epochSuffix, holdersSuffix}
)

// AcquireSharedCall is the call of AcquireSharedScript for lock key: every
// key and argument (a.Window always counts: a shared request hands what
// the line's head is owed).
func AcquireSharedCall(key string, a AcquireArgs) Call {
	return Call{AcquireSharedScript, scriptKeys(key, sharedAcquireSuffixes...), a.Argv()}
}

// RenewSharedCall is RenewCall for a shared hold.
func RenewSharedCall(key, value string, ttl time.Duration, q Quarantine) Call {
	return q.trim(Call{RenewSharedScript, RenewPermitKeys(key), RenewArgv(value, ttl, q)})
}

// releaseSharedCall is ReleaseShared's call: every key and argument.
func releaseSharedCall(key, value string, a ReleaseArgs) Call {
	return Call{releaseSharedScript, scriptKeys(key, sharedReleaseSuffixes...), releaseArgv(value, a)}
}

// ReleaseShared removes value's shared hold of key, if it holds one live;
// the last shared holder hands the key to the first waiter in line (who
// has a.Window to confirm) unless a failover quarantine holds grants back,
// or with a.Announce says "released" when nobody waits. A value holding
// no shared hold leaves the line. False when value held none.
func ReleaseShared(ctx context.Context, r Runner, key, value string, a ReleaseArgs) (bool, error) {
	n, err := r.Run(ctx, releaseSharedCall(key, value, a)).Int64()
	if err != nil {
		return false, fmt.Errorf("release a shared hold of %q: %w", key, err)
	}
	return n == 1, nil
}

//go:embed lua/shared_upgrade.lua
var sharedUpgradeSrc string

// upgradeSharedScript turns a shared hold into the exclusive one
// (UpgradeShared).
var upgradeSharedScript = newScript("shared_upgrade", false, sharedUpgradeSrc, fenceSrc, lineSrc, epochSrc, sharedSrc, permitsSrc)

// Upgrade is what UpgradeShared's script answered.
type Upgrade struct {
	// Upgraded: the value holds the key exclusively, with Fence (0
	// without fencing).
	Upgraded bool
	Fence    uint64
	// Others is how many other shared holders kept it from upgrading (0
	// with Upgraded false and Lost false: a failover quarantine).
	Others int
	// Lost: the value held no live shared hold.
	Lost bool
}

// UpgradeSharedCall is the call that turns value's shared hold of key
// into its exclusive hold for ttl, taking the next fence with fencing,
// under q (see lua/shared_upgrade.lua).
func UpgradeSharedCall(key, value string, ttl time.Duration, fencing bool, q Quarantine) Call {
	args := q.appendArgv(append(make([]any, 0, 3+quarantineArgc), value, Millis(ttl), flag(fencing)))
	return Call{upgradeSharedScript, scriptKeys(key, fenceSuffix, holdersSuffix, epochSuffix), args}
}

// ParseUpgrade reads the reply of UpgradeSharedCall's script.
func ParseUpgrade(reply []any) (Upgrade, error) {
	switch code := kindOf(reply); {
	case code == 1 && len(reply) == 2:
		fence, ok := reply[1].(int64)
		if ok && fence >= 0 {
			return Upgrade{Upgraded: true, Fence: uint64(fence)}, nil
		}
	case code == 0 && len(reply) == 2:
		n, ok := reply[1].(int64)
		if ok {
			return Upgrade{Others: int(n)}, nil
		}
	case code == -1 && len(reply) == 1:
		return Upgrade{Lost: true}, nil
	}
	return Upgrade{}, fmt.Errorf("unexpected upgrade reply %v", reply)
}
