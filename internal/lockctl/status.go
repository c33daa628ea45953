/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/redlease/redlease/api/v1alpha1"
)

// statusReport is what `lockctl status` prints; it never holds the value.
// For a DistributedLock, key and where it lives come from its status
// (status.key, status.connection), the store from spec.storeRef; the
// holder, TTL and fence are read from Redis; the holder's pod and node
// come from status.holder, when it names the holder Redis has.
type statusReport struct {
	Key        string   `json:"key"`
	Mode       string   `json:"mode"`
	Addresses  []string `json:"addresses,omitempty"`  // the servers, or the sentinels
	MasterName string   `json:"masterName,omitempty"` // Sentinel
	Store      string   `json:"store,omitempty"`      // Kind/name or "inline"; empty with --redis
	Ready      string   `json:"ready"`
	// Permits is how many may hold the lock at once: 1 for a lock; above
	// 1 a semaphore, whose permits held and holders are in holding
	// (Holder, Pod, Node and TTL are then empty, Fence is the counter).
	Permits int `json:"permits"`
	// holding is what Redis says, its fields inlined in JSON; nil when it
	// could not be read (Problems says why), so that no field claims the
	// lock is free.
	*holding
	Problems string `json:"error,omitempty"`
}

// holding is the part of a statusReport read from Redis.
type holding struct {
	Held        bool   `json:"held"`
	Holder      string `json:"holder,omitempty"`
	Pod         string `json:"pod,omitempty"`  // the holder's pod (status.holder.pod)
	Node        string `json:"node,omitempty"` // and its node
	TTL         string `json:"ttl,omitempty"`
	Fence       uint64 `json:"fence"`
	PermitsHeld int    `json:"permitsHeld,omitempty"`
	// Shared is how many hold the lock shared (AcquireShared, lockctl run
	// --shared); Holder is then empty.
	Shared  int            `json:"shared,omitempty"`
	Holders []permitReport `json:"holders,omitempty"`
	// Waiting is the key's waiting line; absent when Redis does not
	// report one (Redlock has none).
	Waiting *waitingReport `json:"waiting,omitempty"`
}

// permitReport is one live permit of a semaphore.
type permitReport struct {
	Identity string `json:"identity"`
	TTL      string `json:"ttl"`
	Fence    uint64 `json:"fence,omitempty"`
	// Pending: handed to a waiter that has not confirmed it yet.
	Pending bool `json:"pending,omitempty"`
}

// defaultReadTimeout is the default --request-timeout of status and get:
// how long to wait for the API server and Redis together.
const defaultReadTimeout = 10 * time.Second

// maxTableHolders is how many of a semaphore's holders the table names.
const maxTableHolders = 3

func newStatusCommand(stdout io.Writer, log *redisLog) *cobra.Command {
	var (
		target = targetFlags{kube: kubeFlags{readTimeout: defaultReadTimeout}}
		output string
	)
	cmd := &cobra.Command{
		Use:   "status [NAMESPACE/NAME] [--redis URL --key K] [-o table|json] [--request-timeout D]",
		Short: "Show who holds the lock (with its pod and node), who waits for it, its remaining TTL and fence, its key, servers, store and readiness",
		Long: `Show who holds the lock (with its pod and node), who waits for it, its
remaining TTL and fence, its key, servers, store and readiness.

Under the table, a semaphore's holders and the waiting line: the waiters'
identities in arrival order and how long each has waited (the Redis
server's clock), the first 20 and how many more. Lock values never show.

When the lock cannot be read from Redis, the columns read from it show ?
(-o json leaves them out and says why in "error"), and status exits 6
(Redis unreachable, not answering or refusing) or 5 (the DistributedLock
is not Ready). --request-timeout bounds the whole read, the API server's
answers and Redis's together: a stalled server answers nothing, and
status says so when it runs out.`,
		Args: usage(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				target.lock = args[0]
			}
			if output != "table" && output != "json" {
				return exit(ExitUsage, fmt.Errorf("-o %q: want table or json", output))
			}
			requestTimeout, err := target.kube.requestTimeout()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if requestTimeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, requestTimeout)
				defer cancel()
			}
			l, err := target.open(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = l.Close() }() // nothing held: a failed close loses nothing
			log.naming(l.Key())
			d := l.describe()
			r := statusReport{Key: l.Key(), Mode: d.mode, Addresses: d.addresses, MasterName: d.masterName, Store: d.store, Ready: d.ready}
			in, readErr := l.inspect(ctx)
			r.Permits = in.permits
			if readErr != nil {
				r.Problems = readErr.Error()
			} else {
				r.holding = holdingOf(in, d.holder)
			}
			if err := r.print(stdout, output); err != nil {
				return err
			}
			switch {
			case readErr != nil && ctx.Err() != nil && errors.Is(readErr, context.DeadlineExceeded):
				// No holder to wait for here: a read cut by the deadline
				// is a server that did not answer.
				return exit(ExitUnavailable, fmt.Errorf("%s: Redis did not answer within --request-timeout %v: %w", l.Key(), requestTimeout, readErr))
			case readErr != nil:
				return readFailed(l.Key(), readErr)
			}
			return nil
		},
	}
	target.register(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table or json")
	return cmd
}

// holdingOf is what Redis says about the lock; observed is the
// DistributedLock's status.holder (nil without one).
func holdingOf(in inspection, observed *v1alpha1.LockHolder) *holding {
	if in.permits > 1 {
		h := &holding{Held: in.sem.Held() > 0, PermitsHeld: in.sem.Held(), Fence: in.sem.Fence, Waiting: waitingReportOf(in.sem.Waiting)}
		for _, p := range in.sem.Holders {
			h.Holders = append(h.Holders, permitReport{Identity: p.Identity, TTL: p.TTL.String(), Fence: p.Fence, Pending: p.Pending})
		}
		return h
	}
	h := &holding{Held: in.lock.Held, Holder: in.lock.Identity, Shared: in.lock.Shared, Fence: in.lock.Fence, Waiting: waitingReportOf(in.lock.Waiting)}
	if h.Held {
		h.TTL = in.lock.TTL.String()
		// The controller's observation may lag Redis: only the pod of
		// the holder Redis has is shown.
		if observed != nil && observed.Identity == h.Holder {
			h.Pod, h.Node = observed.Pod, observed.Node
		}
	}
	return h
}

// print writes the report as output (table or json) says.
func (r statusReport) print(w io.Writer, output string) error {
	if output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	printf(tw, "KEY\tMODE\tADDRESSES\tSTORE\tREADY\tPERMITS\tHELD\tHOLDER\tPOD\tNODE\tTTL\tFENCE\tWAITERS\n") // tabwriter buffers; Flush reports write errors
	printf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n",
		orDash(r.Key), orDash(r.Mode), orDash(r.where()), orDash(r.Store), r.Ready, r.Permits, strings.Join(r.read(), "\t"))
	if err := tw.Flush(); err != nil {
		return err
	}
	return r.printLine(w)
}

// read is the columns read from Redis, HELD to WAITERS: ? for each when
// they could not be read.
func (r statusReport) read() []string {
	h := r.holding
	if h == nil {
		return []string{"?", "?", "?", "?", "?", "?", "?"}
	}
	return []string{strconv.Itoa(h.held(r.Permits)), h.holders(r.Permits), orDash(h.Pod), orDash(h.Node), orDash(h.TTL), strconv.FormatUint(h.Fence, 10),
		h.Waiting.count()}
}

// where is the ADDRESSES column: the servers, or in Sentinel mode the
// master name and the sentinels.
func (r statusReport) where() string {
	addrs := strings.Join(r.Addresses, ",")
	if r.MasterName != "" {
		return r.MasterName + " via " + addrs
	}
	return addrs
}

// held is the HELD column: a lock's 0 or 1 (or how many hold it shared),
// a semaphore's permits held.
func (h *holding) held(permits int) int {
	switch {
	case permits > 1:
		return h.PermitsHeld
	case h.Shared > 0:
		return h.Shared
	case h.Held:
		return 1
	}
	return 0
}

// holders is the HOLDER column: a lock's holder, or the first of a
// semaphore's holders and how many more.
func (h *holding) holders(permits int) string {
	if !h.Held {
		return "-"
	}
	if permits <= 1 && h.Shared > 0 {
		return "(shared)"
	}
	if permits <= 1 {
		return orDash(h.Holder)
	}
	var ids []string
	for _, p := range h.Holders[:min(len(h.Holders), maxTableHolders)] {
		ids = append(ids, orDash(p.Identity))
	}
	// get reads the first holders only; PermitsHeld counts them all.
	if more := max(len(h.Holders), h.PermitsHeld) - maxTableHolders; more > 0 {
		ids = append(ids, fmt.Sprintf("+%d more", more))
	}
	return strings.Join(ids, ",")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
