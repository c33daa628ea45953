package lock_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
)

// slotMove moves one slot of a test cluster from one master to another,
// step by step as a reshard does (redistest has no helper for it): mark
// the slot IMPORTING on the destination and MIGRATING on the source,
// MIGRATE its keys, then give the slot to the destination on every master.
type slotMove struct {
	t        *testing.T
	ctx      context.Context
	cluster  *redistest.Cluster
	admins   []*redis.Client
	ids      []string
	slot     int
	src, dst int
}

// newSlotMove prepares moving key's slot from master src to the next one
// (src < 0: from the master whose slot holds keys: the key, its fence
// counter or its epoch record).
func newSlotMove(ctx context.Context, t *testing.T, cluster *redistest.Cluster, key string, src int) *slotMove {
	t.Helper()
	m := &slotMove{t: t, ctx: ctx, cluster: cluster, slot: protocol.KeySlot(key), src: src}
	for i, master := range cluster.Masters {
		admin := master.Client(t)
		id, err := admin.Do(ctx, "cluster", "myid").Text()
		if err != nil {
			t.Fatal(err)
		}
		m.admins, m.ids = append(m.admins, admin), append(m.ids, id)
		if src < 0 && admin.ClusterCountKeysInSlot(ctx, m.slot).Val() > 0 {
			m.src = i
		}
	}
	if m.src < 0 {
		t.Fatalf("no master holds a key of %q's slot", key)
	}
	m.dst = (m.src + 1) % len(m.admins)
	return m
}

// do runs a command on master i, failing the test on an error.
func (m *slotMove) do(i int, args ...any) {
	m.t.Helper()
	if err := m.admins[i].Do(m.ctx, args...).Err(); err != nil {
		m.t.Fatalf("%v on %s: %v", args, m.cluster.Masters[i].Addr(), err)
	}
}

// mark marks the slot IMPORTING on the destination, MIGRATING on the source.
func (m *slotMove) mark() {
	m.t.Helper()
	m.do(m.dst, "cluster", "setslot", m.slot, "importing", m.ids[m.src])
	m.do(m.src, "cluster", "setslot", m.slot, "migrating", m.ids[m.dst])
}

// migrate moves keys (none: every key left in the slot) to the destination.
func (m *slotMove) migrate(keys ...string) {
	m.t.Helper()
	if len(keys) == 0 {
		var err error
		if keys, err = m.admins[m.src].ClusterGetKeysInSlot(m.ctx, m.slot, 100).Result(); err != nil || len(keys) == 0 {
			m.t.Fatalf("keys in slot %d: %v %v", m.slot, keys, err)
		}
	}
	args := []any{"migrate", "127.0.0.1", m.cluster.Masters[m.dst].Port(), "", 0, 5000, "keys"}
	for _, k := range keys {
		args = append(args, k)
	}
	m.do(m.src, args...)
}

// assign gives the slot to the destination on every master.
func (m *slotMove) assign() {
	m.t.Helper()
	for i := range m.admins {
		m.do(i, "cluster", "setslot", m.slot, "node", m.ids[m.dst])
	}
}

// all moves the slot in one go: mark, migrate every key, assign.
func (m *slotMove) all() {
	m.t.Helper()
	m.mark()
	m.migrate()
	m.assign()
}
