package protocol

import (
	"context"
	_ "embed"
	"fmt"
	"time"
)

// Quarantine is a lock's failover quarantine (protocol 5, lua/epoch.lua):
// after its key's server changed (a promoted replica, a restart that may
// have lost writes) the scripts grant nothing until every lease the old
// server granted or renewed has ended on its holder's clock. The zero
// value is no quarantine.
type Quarantine struct {
	// On turns the quarantine on.
	On bool
	// Cutoff bounds how long a master cut off from the others may still
	// have accepted writes: min-replicas-max-lag plus 2 s (a master counts
	// a replica's lag in whole seconds and recounts its good replicas once
	// a second). See docs/protocol.md for when that bound holds.
	Cutoff time.Duration
	// MissingWaits reads a key without an epoch record as one whose record
	// was lost with it (quarantined), not as a new key: for keys whose
	// record is written before first use (the controller's), or whose
	// holders accept that the first use waits.
	MissingWaits bool
}

// quarantineArgc is how many arguments appendArgv adds.
const quarantineArgc = 2

// appendArgv appends the scripts' quarantine arguments to args, in place
// when args has the room (every acquisition, renewal and release passes
// them: no slice of their own).
func (q Quarantine) appendArgv(args []any) []any {
	if !q.On {
		return append(args, "", "0")
	}
	return append(args, Millis(q.Cutoff), flag(q.MissingWaits))
}

// trim leaves out of a renewal's call, without a quarantine, its last key
// (the epoch record) and the quarantine's arguments (appendArgv's, last
// too), which the renew scripts read as absent.
func (q Quarantine) trim(call Call) Call {
	if !q.On {
		call.Keys, call.Args = call.Keys[:len(call.Keys)-1], call.Args[:len(call.Args)-quarantineArgc]
	}
	return call
}

// Length is how long a quarantine lasts after a failover of a key whose
// longest granted TTL is ttl (lua/epoch.lua's rule).
func (q Quarantine) Length(ttl time.Duration) time.Duration {
	n := Millis(ttl) + Millis(q.Cutoff)
	return time.Duration(n+(n+49)/50) * time.Millisecond
}

var (
	//go:embed lua/epoch_read.lua
	epochReadSrc string
	// epochReadScript records key's epoch when it has none (with ttl as
	// its longest TTL) and reports the quarantine left.
	epochReadScript = newScript("epoch_read", false, epochReadSrc, epochSrc)
)

// EpochState is what RecordEpoch found.
type EpochState struct {
	// Created: the key had no epoch record; one was written.
	Created bool
	// QuarantineLeft is how long grants are still held back (0: none).
	QuarantineLeft time.Duration
}

// RecordEpoch checks key's epoch record as the scripts do under q (a
// server that changed starts the quarantine; ttl is the lock's) and
// reports the quarantine left. When the record is missing it writes one:
// with q.MissingWaits, as a loss (quarantined); without, as the record of
// a key before its first use, so that a record missing later reads as a
// loss to holders under MissingWaits. The controller runs it for the locks
// it declares, without MissingWaits only the first time.
func RecordEpoch(ctx context.Context, r Runner, key string, ttl time.Duration, q Quarantine) (EpochState, error) {
	q.On = true
	res, err := r.Run(ctx, Call{epochReadScript, []string{EpochKey(key)}, q.appendArgv([]any{Millis(ttl)})}).Int64Slice()
	if err != nil {
		return EpochState{}, fmt.Errorf("epoch record of %q: %w", key, err)
	}
	if len(res) != 2 {
		return EpochState{}, fmt.Errorf("epoch record of %q: unexpected reply %v", key, res)
	}
	return EpochState{Created: res[0] == 1, QuarantineLeft: time.Duration(res[1]) * time.Millisecond}, nil
}
