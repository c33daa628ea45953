package fence_test

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/fence"
)

func TestRedisStoreAcceptsOnlyIncreasingTokens(t *testing.T) {
	store := fence.NewRedisStore(redistest.StartStandalone(t).Client(t), "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	steps := []struct {
		token  uint64
		value  string
		accept bool
	}{
		{5, "five", true},
		{5, "five again", false}, // equal is stale: each token writes once
		{4, "four", false},
		{6, "six", true},
		{1 << 53, "2^53", true},
		{1<<53 + 1, "2^53+1", true}, // beyond float precision: compared exactly
		{1 << 53, "2^53 again", false},
		{math.MaxUint64, "max", true},
		{math.MaxUint64 - 1, "max-1", false},
	}
	for _, s := range steps {
		err := store.Write(ctx, "res", s.token, s.value)
		if s.accept && err != nil {
			t.Fatalf("Write(%d) = %v, want accepted", s.token, err)
		}
		var stale *fence.StaleError
		if !s.accept && (!errors.Is(err, fence.ErrStale) || !errors.As(err, &stale) || stale.Token != s.token) {
			t.Fatalf("Write(%d) = %v, want a *StaleError", s.token, err)
		}
	}
	tok, val, err := store.Read(ctx, "res")
	if err != nil || tok != math.MaxUint64 || val != "max" {
		t.Fatalf("Read = %d %q %v", tok, val, err)
	}
	if tok, val, err := store.Read(ctx, "never-written"); err != nil || tok != 0 || val != "" {
		t.Fatalf("Read(never written) = %d %q %v", tok, val, err)
	}
}

// Concurrent writers with distinct tokens: the survivor is the largest token,
// and every accepted write carried a token above all accepted before it.
func TestRedisStoreUnderConcurrentWriters(t *testing.T) {
	store := fence.NewRedisStore(redistest.StartStandalone(t).Client(t), "test:")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 200 {
				tok := uint64(i*8 + w + 1)
				err := store.Write(ctx, "shared", tok, strconv.FormatUint(tok, 10))
				if err != nil && !errors.Is(err, fence.ErrStale) {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	tok, val, err := store.Read(ctx, "shared")
	if err != nil || tok != 8*200 || val != "1600" {
		t.Fatalf("Read = %d %q %v, want the largest token 1600", tok, val, err)
	}
}
