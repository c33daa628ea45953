package fence_test

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
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
	var lastTok uint64
	var lastVal string
	for _, s := range steps {
		err := store.Write(ctx, "res", s.token, s.value)
		if s.accept && err != nil {
			t.Fatalf("Write(%d) = %v, want accepted", s.token, err)
		}
		var stale *fence.StaleError
		if !s.accept && (!errors.Is(err, fence.ErrStale) || !errors.As(err, &stale) || stale.Token != s.token) {
			t.Fatalf("Write(%d) = %v, want a *StaleError", s.token, err)
		}
		if !s.accept && stale.Current != lastTok {
			t.Fatalf("Write(%d) refused with Current = %d, want the last accepted token %d", s.token, stale.Current, lastTok)
		}
		if s.accept {
			lastTok, lastVal = s.token, s.value
		}
		// A refused write leaves the last accepted token and value in place.
		if tok, val, err := store.Read(ctx, "res"); err != nil || tok != lastTok || val != lastVal {
			t.Fatalf("Read after Write(%d) = %d %q %v, want %d %q", s.token, tok, val, err, lastTok, lastVal)
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
//
// "Before" is the server's order: a MONITOR connection sees, in execution
// order, the HSET the write script makes for each write it accepts, so the
// tokens it reports must strictly increase and be exactly the writes that
// Write reported accepted.
func TestRedisStoreUnderConcurrentWriters(t *testing.T) {
	srv := redistest.StartStandalone(t)
	client := srv.Client(t)
	store := fence.NewRedisStore(client, "test:")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mon := srv.Monitor(t)

	var (
		mu       sync.Mutex
		accepted = map[uint64]bool{}
		currents []uint64 // Current of each refusal
	)
	var wg sync.WaitGroup
	for w := range uint64(8) {
		wg.Go(func() {
			for i := range uint64(200) {
				tok := i*8 + w + 1
				err := store.Write(ctx, "shared", tok, strconv.FormatUint(tok, 10))
				if err != nil && !errors.Is(err, fence.ErrStale) {
					t.Error(err)
				}
				var stale *fence.StaleError
				switch {
				case err == nil:
					mu.Lock()
					accepted[tok] = true
					mu.Unlock()
				case errors.As(err, &stale):
					// Tokens are distinct, so a refusal means a larger one
					// was already accepted.
					if stale.Current <= tok {
						t.Errorf("Write(%d) refused with Current = %d, want a larger token in force", tok, stale.Current)
					}
					mu.Lock()
					currents = append(currents, stale.Current)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	tok, val, err := store.Read(ctx, "shared")
	if err != nil || tok != 8*200 || val != "1600" {
		t.Fatalf("Read = %d %q %v, want the largest token 1600", tok, val, err)
	}

	order := hsetTokens(t, mon.Mark(t, client, "writes done"), "test:shared")
	for i := 1; i < len(order); i++ {
		if order[i] <= order[i-1] {
			t.Fatalf("accepted token %d (write %d in server order) after %d: not above all accepted before it", order[i], i, order[i-1])
		}
	}
	if len(order) != len(accepted) {
		t.Fatalf("server accepted %d writes, Write reported %d accepted", len(order), len(accepted))
	}
	for _, tok := range order {
		if !accepted[tok] {
			t.Fatalf("server accepted token %d but Write did not report it accepted", tok)
		}
	}
	if order[len(order)-1] != 8*200 {
		t.Fatalf("last accepted token = %d, want 1600", order[len(order)-1])
	}
	for _, c := range currents {
		if !accepted[c] {
			t.Fatalf("a refusal named token %d as in force, but it was never accepted", c)
		}
	}
}

// hsetTokens is the token of every HSET a script ran on key, in the
// server's order.
func hsetTokens(t *testing.T, calls []redistest.Call, key string) []uint64 {
	t.Helper()
	var tokens []uint64
	for _, c := range calls {
		if !c.Lua || !c.Is("HSET", key, "token") || len(c.Args) < 4 {
			continue
		}
		tok, err := strconv.ParseUint(c.Args[3], 10, 64)
		if err != nil {
			t.Fatalf("MONITOR: bad token in %q", c.Args)
		}
		tokens = append(tokens, tok)
	}
	return tokens
}

// The write script compares tokens as decimal strings by length, exact
// only for canonical integers: a token with leading zeros
// ("0000000000000009" is longer than "12345678") would win and then refuse
// every real token below 10^16. It is refused and nothing is written.
func TestRedisStoreRefusesNonCanonicalTokens(t *testing.T) {
	client := redistest.StartStandalone(t).Client(t)
	ctx := t.Context()
	store := fence.NewRedisStore(client, "")
	if err := store.Write(ctx, "acct", 12345678, "real"); err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{"0000000000000009", "00", "+9", "-1", ""} {
		err := fence.WriteScript.Run(ctx, client, []string{"fence:acct"}, token, "forged").Err()
		if err == nil || !strings.Contains(err.Error(), "not a canonical decimal integer") {
			t.Errorf("writing with token %q = %v, want the script's refusal", token, err)
		}
	}
	if err := store.Write(ctx, "acct", 12345679, "next"); err != nil {
		t.Fatalf("a real token above the last after the refusals: %v", err)
	}
}
