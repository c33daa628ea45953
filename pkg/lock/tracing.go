package lock

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Spans (WithTracerProvider), for tracing what a lock cost a request:
//
//   - redlease.lock.acquire: one Acquire or TryAcquire, a child of the
//     caller's span, with an "attempt" event per acquisition attempt (what
//     it found) and, at its end, how the lease came (an attempt, or a
//     hand-off from the line), the fence and the number of attempts.
//     ErrNotAcquired is an outcome, not an error: the span's status stays
//     unset; other errors set it.
//   - redlease.lock.renew: a renewal that failed (an error, or the key no
//     longer ours), from its send to its answer, linked to the acquire
//     span of its lease. Renewals that succeed make no span: one every
//     TTL/3 per lease would drown the rest.
//   - redlease.lock.lost: the moment a lease ended without Release (its
//     deadline, the key taken, WithMaxHold), linked likewise.
//
// No span ever carries a lock value (the ownership proof).

// tracerName is the instrumentation scope of the spans.
const tracerName = "github.com/redlease/redlease/pkg/lock"

// Attribute keys of the spans.
const (
	attrKey      = attribute.Key("redlease.lock.key")
	attrTry      = attribute.Key("redlease.lock.try")
	attrResult   = attribute.Key("redlease.lock.result")
	attrVia      = attribute.Key("redlease.lock.via")
	attrFence    = attribute.Key("redlease.lock.fence")
	attrAttempts = attribute.Key("redlease.lock.attempts")
	attrHolderMs = attribute.Key("redlease.lock.holder_ttl_ms")
	attrQuarMs   = attribute.Key("redlease.lock.quarantine_ms")
	attrReason   = attribute.Key("redlease.lock.lost_reason")
)

// tracing makes the spans; with a nil tracer (the default) it does nothing
// and costs nothing, not even a context.
type tracing struct{ tracer trace.Tracer }

func newTracing(tp trace.TracerProvider) tracing {
	if tp == nil {
		return tracing{}
	}
	return tracing{tp.Tracer(tracerName)}
}

// startAcquire starts the span of an acquisition of key (try: TryAcquire).
func (tr tracing) startAcquire(ctx context.Context, key string, try bool) context.Context {
	if tr.tracer == nil {
		return ctx
	}
	ctx, _ = tr.tracer.Start(ctx, "redlease.lock.acquire", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attrKey.String(key), attrTry.Bool(try)))
	return ctx
}

// endAcquire ends ctx's acquire span with its outcome.
func (tr tracing) endAcquire(ctx context.Context, lease *Lease, err error) {
	if tr.tracer == nil {
		return
	}
	span := trace.SpanFromContext(ctx)
	switch {
	case err == nil:
		span.SetAttributes(attrResult.String("acquired"), attrFence.Int64(int64(lease.fence))) //nolint:gosec // G115: fences stay far below 2^63 (they start from a clock in µs)
	case errors.Is(err, ErrNotAcquired):
		span.SetAttributes(attrResult.String("not_acquired"))
	default:
		span.SetAttributes(attrResult.String("error"))
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// via records on ctx's acquire span how the lease came: "attempt" or
// "handoff".
func (tr tracing) via(ctx context.Context, how string) {
	if tr.tracer != nil {
		trace.SpanFromContext(ctx).SetAttributes(attrVia.String(how))
	}
}

// tried records on ctx's acquire span its n-th attempt, and what it
// found when it failed with err.
func (tr tracing) tried(ctx context.Context, n int, err error) {
	if tr.tracer == nil {
		return
	}
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(attrAttempts.Int(n))
	var na *NotAcquiredError
	switch {
	case err == nil:
	case errors.As(err, &na):
		span.AddEvent("attempt", trace.WithAttributes(attrResult.String("held"),
			attrHolderMs.Int64(na.HolderTTL.Milliseconds()), attrQuarMs.Int64(na.Quarantine.Milliseconds())))
	default:
		span.AddEvent("attempt", trace.WithAttributes(attrResult.String("error"), attribute.String("error", err.Error())))
	}
}

// renewFailed records lease's renewal sent at sent that failed with err
// (nil err: the key was no longer ours).
func (tr tracing) renewFailed(s *Lease, sent time.Time, err error) {
	if tr.tracer == nil {
		return
	}
	_, span := tr.tracer.Start(context.Background(), "redlease.lock.renew", trace.WithTimestamp(sent),
		trace.WithLinks(trace.Link{SpanContext: s.acquiredIn}), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attrKey.String(s.key), attrFence.Int64(int64(s.fence)))) //nolint:gosec // G115: as in endAcquire
	if err == nil {
		err = errors.New("the key is no longer this lease's")
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	span.End()
}

// lost records that lease s ended without Release, for reason.
func (tr tracing) lost(s *Lease, reason string, err error) {
	if tr.tracer == nil {
		return
	}
	_, span := tr.tracer.Start(context.Background(), "redlease.lock.lost",
		trace.WithLinks(trace.Link{SpanContext: s.acquiredIn}),
		trace.WithAttributes(attrKey.String(s.key), attrFence.Int64(int64(s.fence)), attrReason.String(reason))) //nolint:gosec // G115: as in endAcquire
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	span.End()
}
