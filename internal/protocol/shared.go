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
	// AcquireSharedScript: KEYS and ARGV as AcquireScript's
	// (AcquireSharedCall). Replies as AcquireScript, the fence being the
	// counter as the grant found it.
	AcquireSharedScript = sentOnly(newScript("shared_acquire", false, sharedAcquireSrc, fenceSrc, lineSrc, epochSrc, sharedSrc, valueSrc))

	//go:embed lua/shared_release.lua
	sharedReleaseSrc    string
	releaseSharedScript = newScript("shared_release", false, sharedReleaseSrc, fenceSrc, lineSrc, epochSrc, sharedSrc)

	//go:embed lua/shared_renew.lua
	sharedRenewSrc string
	// RenewSharedScript: KEYS RenewKeys; ARGV RenewArgv. Replies 1
	// when extended, 0 when the value no longer held the key shared.
	RenewSharedScript = newScript("shared_renew", false, sharedRenewSrc, epochSrc, sharedSrc)
)

// AcquireSharedCall is the call of AcquireSharedScript for lock key: the
// lock acquire's keys and arguments, left out as AcquireCall leaves them
// out for a FIFO acquire (the line and the hand-off window always count: a
// shared request hands the line's head what it is owed).
func AcquireSharedCall(key string, a AcquireArgs) Call {
	a.FIFO = true
	c := AcquireCall(key, a)
	c.Script = AcquireSharedScript
	return c
}

// RenewSharedCall is RenewCall for a shared hold.
func RenewSharedCall(key, value string, ttl time.Duration, q Quarantine) Call {
	c := RenewCall(key, value, ttl, q)
	c.Script = RenewSharedScript
	return c
}

// releaseSharedCall is ReleaseShared's call: the lock release's keys and
// arguments, left out as Release leaves them out.
func releaseSharedCall(key, value string, a ReleaseArgs) Call {
	c := releaseCall(key, value, a)
	c.Script = releaseSharedScript
	return c
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
var upgradeSharedScript = newScript("shared_upgrade", false, sharedUpgradeSrc, fenceSrc, lineSrc, epochSrc, sharedSrc)

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
	return Call{upgradeSharedScript, scriptKeys(key, fenceSuffix, epochSuffix), args}
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
