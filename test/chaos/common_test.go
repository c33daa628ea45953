package chaos

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/pkg/lock"
)

var waitFor = locktest.WaitFor

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// newLocker returns a Locker on c, closed when t ends.
func newLocker(t *testing.T, c redis.UniversalClient, opts ...lock.Option) *lock.Locker {
	t.Helper()
	l, err := lock.New(c, opts...)
	return closedAtEnd(t, l, err)
}

// newRedlock returns a Redlock Locker over clients, closed when t ends.
func newRedlock(t *testing.T, clients []redis.UniversalClient, opts ...lock.Option) *lock.Locker {
	t.Helper()
	l, err := lock.NewRedlock(clients, opts...)
	return closedAtEnd(t, l, err)
}

func closedAtEnd(t *testing.T, l *lock.Locker, err error) *lock.Locker {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// hold records a redlease lease's claim: from when the holder learned it
// held the lock until it released it or its local deadline passed.
func hold(h *History, client string, lease *lock.Lease, from int64, release func() error) error {
	until := Mono()
	err := release()
	if deadline := MonoAt(lease.ValidUntil()); deadline < until {
		until = deadline // it stopped believing at its deadline
	}
	h.Claim(Claim{Client: client, Key: lease.Key(), Fence: lease.Fence(), From: from, Until: until})
	return err
}

// expectClean fails t when the checker found violations in redlease's run.
func expectClean(t *testing.T, what string, vs []Violation) {
	t.Helper()
	for _, v := range vs {
		t.Errorf("%s: %s", what, v)
	}
}

// expectCaught fails t when the checker found nothing in a naive run: the
// check would then be unable to fail.
func expectCaught(t *testing.T, what string, vs []Violation) {
	t.Helper()
	if len(vs) == 0 {
		t.Fatalf("%s: the naive variant was not caught; the check cannot fail", what)
	}
	t.Logf("%s: caught the naive variant: %s", what, vs[0])
}
