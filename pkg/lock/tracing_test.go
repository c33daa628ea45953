package lock_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/pkg/lock"
)

// tracer records the spans of the Lockers given its provider.
func tracer(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, rec
}

// spansNamed are rec's ended spans called name.
func spansNamed(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// With WithTracerProvider, an acquisition is a span under the caller's,
// saying how the lease came and with which fence; a waiter's span has an
// event for the attempt that found the key held and says the lease came by
// hand-off; a TryAcquire that finds the key held ends without an error
// status.
func TestSpansOfAcquisitions(t *testing.T) {
	srv, admin := startRedis(t)
	ctx := ctxTimeout(t, 30*time.Second)
	tp, rec := tracer(t)
	ls := separateLockers(t, srv.Addr(), 2, lock.WithTTL(time.Second), lock.WithTracerProvider(tp))
	parentCtx, parent := tp.Tracer("test").Start(ctx, "request")

	lease, err := ls[0].TryAcquire(parentCtx, "traced")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ls[1].TryAcquire(ctx, "traced"); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("TryAcquire = %v, want ErrNotAcquired", err)
	}
	got := acquireInBackground(ctx, t, ls[1], "traced")
	channel := protocol.WaiterChannel("traced", "pod-1")
	waitFor(t, 5*time.Second, "the waiter to queue and listen", func() bool {
		return admin.ZCard(ctx, protocol.LineKey("traced")).Val() == 1 && admin.PubSubNumSub(ctx, channel).Val()[channel] == 1
	})
	time.Sleep(50 * time.Millisecond) // its attempt once subscribed has run
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	<-got
	parent.End()

	acquires := spansNamed(rec, "redlease.lock.acquire")
	if len(acquires) != 3 {
		t.Fatalf("%d acquire spans, want 3", len(acquires))
	}
	if acquires[0].Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Fatal("the acquire span is not a child of the caller's span")
	}
	for i, want := range []acquireSpan{
		{result: "acquired", via: "attempt", try: true, fence: true},
		{result: "not_acquired", try: true, heldAttempt: true},
		{result: "acquired", via: "handoff", heldAttempt: true, fence: true},
	} {
		if got := readAcquireSpan(acquires[i]); got != want {
			t.Errorf("acquire span %d = %+v, want %+v", i, got, want)
		}
		if acquires[i].Status().Code == codes.Error {
			t.Errorf("acquire span %d: status %v, want unset", i, acquires[i].Status())
		}
	}
	noValueIn(t, rec, lease.Value())
}

// acquireSpan is what an acquire span says.
type acquireSpan struct {
	result, via             string
	try, fence, heldAttempt bool
}

func readAcquireSpan(s sdktrace.ReadOnlySpan) acquireSpan {
	return acquireSpan{
		result:      attr(s, "redlease.lock.result").AsString(),
		via:         attr(s, "redlease.lock.via").AsString(),
		try:         attr(s, "redlease.lock.try").AsBool(),
		fence:       attr(s, "redlease.lock.fence").AsInt64() > 0,
		heldAttempt: slices.ContainsFunc(s.Events(), func(e sdktrace.Event) bool { return e.Name == "attempt" }),
	}
}

// A lease whose key is taken from outside: its renewal finds the key not
// its own, which makes a failed-renewal span and a lost-lease span, both
// errors linked to the lease's acquire span.
func TestSpansOfALostLease(t *testing.T) {
	srv, admin := startRedis(t)
	ctx := ctxTimeout(t, 30*time.Second)
	tp, rec := tracer(t)
	l := newLocker(t, srv.Client(t), lock.WithTTL(time.Second), lock.WithTracerProvider(tp))
	lost, err := l.TryAcquire(ctx, "taken")
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Set(ctx, "taken", "someone-else", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	<-lost.Done()
	waitFor(t, 5*time.Second, "the lost-lease span", func() bool { return len(spansNamed(rec, "redlease.lock.lost")) == 1 })
	acquired := spansNamed(rec, "redlease.lock.acquire")[0].SpanContext()
	for _, name := range []string{"redlease.lock.renew", "redlease.lock.lost"} {
		spans := spansNamed(rec, name)
		if len(spans) != 1 {
			t.Fatalf("%d %s spans, want 1", len(spans), name)
		}
		s := spans[0]
		if s.Status().Code != codes.Error || len(s.Links()) != 1 || s.Links()[0].SpanContext.SpanID() != acquired.SpanID() {
			t.Fatalf("%s: status %v, links %v: want an error linked to the acquire span", name, s.Status(), s.Links())
		}
	}
	if r := attr(spansNamed(rec, "redlease.lock.lost")[0], "redlease.lock.lost_reason").AsString(); r != "not_owner" {
		t.Fatalf("lost_reason = %q, want not_owner", r)
	}
	noValueIn(t, rec, lost.Value())
}

// noValueIn fails when a span's attribute carries the lock value v.
func noValueIn(t *testing.T, rec *tracetest.SpanRecorder, v string) {
	t.Helper()
	for _, s := range rec.Ended() {
		for _, kv := range s.Attributes() {
			if strings.Contains(kv.Value.String(), v) {
				t.Fatalf("span %s carries a lock value in %s", s.Name(), kv.Key)
			}
		}
	}
}
