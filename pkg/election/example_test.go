package election_test

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/redlease/redlease/pkg/election"
	"github.com/redlease/redlease/pkg/fence"
)

// A singleton worker: every replica runs this; one leads at a time and
// writes with its fencing token, so a deposed leader's late writes are
// refused by the store.
func ExampleRun() {
	client := redis.NewClient(&redis.Options{Addr: "redis:6379"})
	defer func() {
		if err := client.Close(); err != nil {
			log.Print(err)
		}
	}()
	store := fence.NewRedisStore(client, "")

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	err := election.Run(ctx, election.Config{
		Client:          client,
		Key:             "billing/settlement-leader",
		Identity:        os.Getenv("POD_NAME"),
		TTL:             10 * time.Second,
		ReleaseOnCancel: true, // on SIGTERM, hand over at once
		Callbacks: election.Callbacks{
			OnStartedLeading: func(ctx context.Context, token uint64) {
				for ctx.Err() == nil {
					if err := store.Write(ctx, "settlement", token, "result"); err != nil {
						return // fence.ErrStale: someone newer leads
					}
					time.Sleep(time.Second)
				}
			},
			OnNewLeader: func(identity string) { log.Printf("leader: %s", identity) },
		},
	})
	if err != nil {
		log.Fatal(err) // lost leadership (or bad config): exit and be restarted
	}
}

// A controller-runtime manager electing its leader on Redis.
func ExampleNewResourceLock() {
	client := redis.NewClient(&redis.Options{Addr: "redis:6379"})
	rl, err := election.NewResourceLock(client, "operators/my-manager", os.Getenv("POD_NAME"))
	if err != nil {
		log.Fatal(err)
	}
	mgr, err := manager.New(&rest.Config{Host: "https://kubernetes.default"}, manager.Options{
		LeaderElection:                      true,
		LeaderElectionResourceLockInterface: rl,
		LeaderElectionReleaseOnCancel:       true,
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = mgr // mgr.Start(ctx) campaigns before starting leader-only runnables
}

// leaderElection is docs/library.md's election snippet (test/docs's
// TestGoSnippets compares them), so that it compiles.
func leaderElection(ctx context.Context, redisClient redis.UniversalClient) error {
	return election.Run(ctx, election.Config{
		Client: redisClient, Key: "billing/settlement-leader", TTL: 15 * time.Second,
		ReleaseOnCancel: true,
		Callbacks: election.Callbacks{
			OnStartedLeading: func(ctx context.Context, fence uint64) { work(ctx, fence) },
			OnStoppedLeading: func() { log.Print("no longer leading") },
			OnNewLeader:      func(identity string) { log.Print("leader: ", identity) },
		},
	})
}

// work stands for a leader's work: it runs until ctx ends, sending fence
// with every write.
func work(ctx context.Context, fence uint64) {
	_ = fence
	<-ctx.Done()
}

var _ = leaderElection // compiled, not run: it needs a Redis
