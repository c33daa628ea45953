/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
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
	Held       bool     `json:"held"`
	Holder     string   `json:"holder,omitempty"`
	Pod        string   `json:"pod,omitempty"`  // the holder's pod (status.holder.pod)
	Node       string   `json:"node,omitempty"` // and its node
	TTL        string   `json:"ttl,omitempty"`
	Fence      uint64   `json:"fence"`
	// Permits is how many may hold the lock at once: 1 for a lock; above
	// 1 a semaphore, whose permits held and holders are below (Holder,
	// Pod, Node and TTL are then empty, Fence is the counter).
	Permits     int            `json:"permits"`
	PermitsHeld int            `json:"permitsHeld,omitempty"`
	Holders     []permitReport `json:"holders,omitempty"`
	Problems    string         `json:"error,omitempty"`
}

// permitReport is one live permit of a semaphore.
type permitReport struct {
	Identity string `json:"identity"`
	TTL      string `json:"ttl"`
	Fence    uint64 `json:"fence,omitempty"`
	// Pending: handed to a waiter that has not confirmed it yet.
	Pending bool `json:"pending,omitempty"`
}

// maxTableHolders is how many of a semaphore's holders the table names.
const maxTableHolders = 3

func newStatusCommand(stdout io.Writer) *cobra.Command {
	var (
		target targetFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "status [NAMESPACE/NAME] [--redis URL --key K] [-o table|json]",
		Short: "Show who holds the lock (with its pod and node), its remaining TTL and fence, its key, servers, store and readiness",
		Args:  usage(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				target.lock = args[0]
			}
			if output != "table" && output != "json" {
				return exit(ExitUsage, fmt.Errorf("-o %q: want table or json", output))
			}
			l, err := target.open(cmd.Context())
			if err != nil {
				return err
			}
			defer func() { _ = l.Close() }() // nothing held: a failed close loses nothing
			d := l.describe()
			r := statusReport{Key: l.Key(), Mode: d.mode, Addresses: d.addresses, MasterName: d.masterName, Store: d.store, Ready: d.ready}
			in, err := l.inspect(cmd.Context())
			r.Permits = in.permits
			switch h := in.lock; {
			case err != nil:
				r.Problems = err.Error()
			case in.permits > 1:
				r.Held, r.PermitsHeld, r.Fence = in.sem.Held() > 0, in.sem.Held(), in.sem.Fence
				for _, p := range in.sem.Holders {
					r.Holders = append(r.Holders, permitReport{Identity: p.Identity, TTL: p.TTL.String(), Fence: p.Fence, Pending: p.Pending})
				}
			default:
				r.Held, r.Holder, r.Fence = h.Held, h.Identity, h.Fence
				if h.Held {
					r.TTL = h.TTL.String()
					// The controller's observation may lag Redis: only
					// the pod of the holder Redis has is shown.
					if sh := d.holder; sh != nil && sh.Identity == h.Identity {
						r.Pod, r.Node = sh.Pod, sh.Node
					}
				}
			}
			if output == "json" {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			printf(w, "KEY\tMODE\tADDRESSES\tSTORE\tREADY\tPERMITS\tHELD\tHOLDER\tPOD\tNODE\tTTL\tFENCE\n") // tabwriter buffers; Flush reports write errors
			printf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%d\n",
				orDash(r.Key), orDash(r.Mode), orDash(r.where()), orDash(r.Store), r.Ready, r.Permits, r.held(), r.holders(), orDash(r.Pod), orDash(r.Node), orDash(r.TTL), r.Fence)
			if err := w.Flush(); err != nil {
				return err
			}
			if r.Problems != "" {
				printf(stdout, "error: %s\n", strings.TrimSpace(r.Problems))
			}
			return nil
		},
	}
	target.register(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table or json")
	return cmd
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

// held is the HELD column: a lock's 0 or 1, a semaphore's permits held.
func (r statusReport) held() int {
	switch {
	case r.Permits > 1:
		return r.PermitsHeld
	case r.Held:
		return 1
	}
	return 0
}

// holders is the HOLDER column: a lock's holder, or the first of a
// semaphore's holders and how many more.
func (r statusReport) holders() string {
	if !r.Held {
		return "-"
	}
	if r.Permits <= 1 {
		return orDash(r.Holder)
	}
	var ids []string
	for _, h := range r.Holders[:min(len(r.Holders), maxTableHolders)] {
		ids = append(ids, orDash(h.Identity))
	}
	if more := len(r.Holders) - maxTableHolders; more > 0 {
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
