package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/election"
)

// On Redis Cluster the leader's messages go out on sharded pub/sub, and
// the observers listen there: after a leader hands over (ReleaseOnCancel),
// the third candidate hears of its successor from the "acquired" message
// within a second, not at the old leader's PTTL (20 s) as it would if it
// listened on classic pub/sub.
func TestObserversHearTheLeaderOnCluster(t *testing.T) {
	cluster := redistest.StartCluster(t)
	const key, ttl = "cluster-leader", 20 * time.Second
	leaders := make(chan leadership, 4)
	config := func(id string) election.Config {
		return election.Config{
			Client: cluster.Client(t), Key: key, Identity: id, TTL: ttl, ReleaseOnCancel: true,
			Callbacks: election.Callbacks{OnStartedLeading: func(ctx context.Context, fence uint64) {
				leaders <- leadership{id: id, fence: fence, at: time.Now()}
				<-ctx.Done()
			}},
		}
	}
	runners := map[string]*runner{}
	for _, id := range []string{"a", "b", "c"} {
		runners[id] = start(t, config(id))
	}
	first := recv(t, leaders, 10*time.Second, "the first leadership")
	for _, r := range runners {
		r.waitLeader(t, first.id, 5*time.Second)
	}
	runners[first.id].cancel()
	next := recv(t, leaders, 5*time.Second, "the hand-over")
	for id, r := range runners {
		if id != first.id && id != next.id {
			r.waitLeader(t, next.id, time.Second)
		}
	}
}
