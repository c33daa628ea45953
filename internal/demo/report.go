package demo

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redisconn"
	"github.com/redlease/redlease/pkg/fence"
	"github.com/redlease/redlease/pkg/lock"
)

// What the demo shows: the live table, the summary with the fenced
// ledgers, and the tenants' isolation.

func (d *demo) table(ctx context.Context, c client.Client, elapsed time.Duration) {
	type lockRow struct{ ns, ready, holder, fence string }
	var rows []lockRow
	for _, ns := range tenants {
		var dl v1alpha1.DistributedLock
		row := lockRow{ns: ns, ready: "Unknown", holder: "-", fence: "-"}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: lockName}, &dl); err == nil {
			if dl.Status.Holder != nil {
				row.holder, row.fence = dl.Status.Holder.Identity, strconv.FormatInt(dl.Status.Holder.Fence, 10)
			}
			if cond := apimeta.FindStatusCondition(dl.Status.Conditions, v1alpha1.ConditionReady); cond != nil {
				row.ready = string(cond.Status)
			}
		}
		rows = append(rows, row)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	printf(d.out, "\n[%3.0fs]\n", elapsed.Seconds())
	for _, r := range rows {
		printf(d.out, "  %s/%s  Ready=%s  holder (status)=%s  fence=%s\n", r.ns, lockName, r.ready, r.holder, r.fence)
	}
	printf(d.out, "  %-9s %-8s %8s %9s %8s %5s %s\n", "NAMESPACE", "WORKER", "ACQUIRED", "ACCEPTED", "REFUSED", "LOST", "")
	for _, name := range d.names() {
		s := d.stats[name]
		note := ""
		if s.paused {
			note = "(paused)"
		}
		printf(d.out, "  %-9s %-8s %8d %9d %8d %5d %s\n", s.namespace, name, s.acquired, s.accepted, s.refused, s.lost, note)
	}
}

func (d *demo) names() []string {
	names := make([]string, 0, len(d.stats))
	for n := range d.stats {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := d.stats[names[i]], d.stats[names[j]]
		return a.namespace < b.namespace || a.namespace == b.namespace && names[i] < names[j]
	})
	return names
}

// summary checks each tenant's ledger against what its workers report.
func (d *demo) summary(ctx context.Context, storeAddr string) error {
	rc := redis.NewClient(&redis.Options{Addr: storeAddr})
	defer func() { _ = rc.Close() }()
	store := fence.NewRedisStore(rc, "")
	d.mu.Lock()
	defer d.mu.Unlock()
	printf(d.out, "\n==> summary\n")
	refusedAll := 0
	for _, ns := range tenants {
		token, v, err := store.Read(ctx, ledgerKey(ns))
		if err != nil {
			return err
		}
		accepted, refused := 0, 0
		for _, s := range d.stats {
			if s.namespace == ns {
				accepted += s.accepted
				refused += s.refused
			}
		}
		refusedAll += refused
		printf(d.out, "    %s: %d increments accepted, %d late writes refused by the fence; ledger = %s (last fence %d)\n", ns, accepted, refused, v, token)
		if strconv.Itoa(accepted) != v {
			return fmt.Errorf("%s's ledger is %s but %d increments were accepted: an update was lost", ns, v, accepted)
		}
	}
	if d.pausedAt != "" && refusedAll == 0 {
		return errors.New("the paused holder's late write was not refused")
	}
	printf(d.out, "==> no update lost; every write after a lost lease was refused by its fence\n")
	return nil
}

// showIsolation connects as a pod of tenants[0] would, with only what its
// lock's status and credentials Secret publish, and tries to take
// tenants[1]'s lock: the tenant's Redis ACL user refuses it (NOPERM).
func (d *demo) showIsolation(ctx context.Context, c client.Client) error {
	own, other := tenants[0], tenants[1]
	target := other + "/" + lockName
	user, err := takeOthersLock(ctx, c, own, lockName, target)
	if err != nil {
		return err
	}
	printf(d.out, "==> isolation: with %s's credentials (Redis user %s), taking %s is refused: NOPERM\n", own, user, target)
	return nil
}

// takeOthersLock connects as a pod of namespace own would, with only what
// its lock's status and credentials Secret publish, and tries to take the
// key target (another tenant's): nil, with the Redis user, when that was
// refused with NOPERM.
func takeOthersLock(ctx context.Context, c client.Client, own, lockName, target string) (string, error) {
	var dl v1alpha1.DistributedLock
	if err := c.Get(ctx, client.ObjectKey{Namespace: own, Name: lockName}, &dl); err != nil {
		return "", err
	}
	if dl.Status.Connection == nil || dl.Status.CredentialsSecretRef == nil {
		return "", fmt.Errorf("%s/%s publishes no connection or credentials Secret", own, lockName)
	}
	var secret corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: own, Name: dl.Status.CredentialsSecretRef.Name}, &secret); err != nil {
		return "", err
	}
	servers, sentinels, err := redisconn.FromSecret(secret.Data, false, "", false)
	if err != nil {
		return "", err
	}
	clients, err := redisconn.NewUniversal(*dl.Status.Connection, servers, sentinels)
	if err != nil {
		return "", err
	}
	defer redisconn.CloseAll(clients)
	locker, err := lock.New(clients[0], lock.WithIdentity("intruder"))
	if err != nil {
		return "", err
	}
	defer func() { _ = locker.Close() }()
	lease, err := locker.TryAcquire(ctx, target)
	if err == nil {
		_ = lease.Release(ctx) // the caller fails on this; give the lock back first
		return "", fmt.Errorf("with %s's credentials, %s was taken: tenants are not isolated", own, target)
	}
	if !strings.Contains(err.Error(), "NOPERM") {
		return "", fmt.Errorf("with %s's credentials, taking %s failed, but not with NOPERM: %w", own, target, err)
	}
	return string(secret.Data[v1alpha1.CredentialsUsername]), nil
}

// ledgerKey is the fenced counter of namespace ns's workers.
func ledgerKey(ns string) string { return ns + "/ledger" }
