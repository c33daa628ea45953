package protocol

import (
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Attempt is an acquire script's reply (AcquireScript,
// AcquirePermitScript): {1, fence} when acquired, {0, ms, counter,
// quarantine, history, recorded} when not (lua/fence.lua's
// fence_not_acquired).
type Attempt struct {
	// Acquired: the key (or a permit) is the caller's; Fence is then its
	// fence (0 without fencing).
	Acquired bool
	Fence    uint64
	// Wait is, when not acquired, the holder's PTTL for a lock (-1: the
	// key has no TTL), the time until a permit frees for a semaphore.
	Wait time.Duration
	// Counter is the key's hand-off counter as the attempt saw it
	// (protocol 4; -1: not an integer, nothing counts from it), and
	// History the history it belongs to (protocol 6: the server's
	// replication ID; "" unknown). Counters compare only within one
	// history: the counter goes back only across a change of it.
	Counter int64
	History string
	// Quarantine is how long a failover quarantine still holds grants
	// back (0: none).
	Quarantine time.Duration
	// RecordedTTL is the longest TTL the key's epoch record holds (the
	// failover quarantine's; 0 without it): what a quarantine after a
	// failover waits for.
	RecordedTTL time.Duration
}

// ParseAttempt reads an acquire script's reply.
func ParseAttempt(cmd *redis.Cmd) (Attempt, error) {
	res, err := cmd.Slice()
	if err != nil {
		return Attempt{}, err
	}
	ints := make([]int64, len(res))
	for i, v := range res {
		n, ok := v.(int64)
		if !ok && i != 4 {
			return Attempt{}, fmt.Errorf("unexpected reply %v", res)
		}
		ints[i] = n
	}
	switch {
	case len(res) == 2 && ints[0] == 1 && ints[1] >= 0:
		return Attempt{Acquired: true, Fence: uint64(ints[1])}, nil //nolint:gosec // G115: ints[1] >= 0 is checked on this line
	case len(res) != 6 || ints[0] != 0:
		return Attempt{}, fmt.Errorf("unexpected reply %v", res)
	}
	history, ok := res[4].(string)
	if !ok {
		return Attempt{}, fmt.Errorf("unexpected reply %v", res)
	}
	return Attempt{Wait: time.Duration(ints[1]) * time.Millisecond, Counter: ints[2],
		Quarantine: time.Duration(ints[3]) * time.Millisecond, History: history,
		RecordedTTL: time.Duration(ints[5]) * time.Millisecond}, nil
}
