/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redlease/redlease/pkg/lock"
)

// runFileLedger is the Go contender of the lock agent's examples
// (examples/agent): rounds times, take DistributedLock namespace/lockName
// with the library (pkg/kube, as a Go pod does), append "FENCE COUNT" to
// the fenced ledger file only with a fence above its last line's, print
// "fence N", keep the lease for hold (the examples' HOLD_MS), release. The
// same ledger format as the examples, so a Go pod and pods in other
// languages (through their agents) share one ledger.
func runFileLedger(namespace, lockName, path string, rounds int, hold time.Duration) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	l, err := podLocker(ctx, "", namespace, lockName)
	if err != nil {
		printf(os.Stderr, "file-ledger: %v\n", err)
		return 1
	}
	defer func() { _ = l.Close() }()
	for range rounds {
		lease, err := l.Acquire(ctx)
		if err != nil {
			printf(os.Stderr, "file-ledger: %v\n", err)
			return 1
		}
		if err = appendFenced(path, lease); err == nil {
			time.Sleep(hold)
		}
		_ = lease.Release(context.Background()) // lost or released: the next round acquires afresh
		if err != nil {
			printf(os.Stderr, "file-ledger: %v\n", err)
			return 1
		}
	}
	return 0
}

// appendFenced is the ledger's check: a write under lease is taken only
// with a fence above the last accepted one.
func appendFenced(path string, lease *lock.Lease) error {
	last, count, err := readFileLedger(path)
	if err != nil {
		return err
	}
	if err := lease.Err(); err != nil {
		return fmt.Errorf("not writing: %w", err)
	}
	if lease.Fence() <= last {
		return fmt.Errorf("refused: fence %d is not above the ledger's %d", lease.Fence(), last)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o666) //nolint:gosec // G302,G304: the ledger file the test shares between pods of several users
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(f, "%d %d\n", lease.Fence(), count+1); err != nil {
		_ = f.Close()
		return err
	}
	printf(os.Stdout, "fence %d\n", lease.Fence())
	return f.Close()
}

// readFileLedger is the ledger's state: its last line's fence and count,
// 0 0 before any write.
func readFileLedger(path string) (fence uint64, count int, err error) {
	b, err := os.ReadFile(path) //nolint:gosec // G304: the ledger file named on the command line
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	lines := strings.Fields(strings.TrimSpace(string(b)))
	if len(lines) < 2 {
		return 0, 0, nil
	}
	if fence, err = strconv.ParseUint(lines[len(lines)-2], 10, 64); err != nil {
		return 0, 0, fmt.Errorf("ledger %s: %w", path, err)
	}
	count, err = strconv.Atoi(lines[len(lines)-1])
	return fence, count, err
}
