package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	lockv1 "github.com/redlease/redlease/api/proto/redlease/lock/v1"
	"github.com/redlease/redlease/api/proto/redlease/lock/v1/lockv1connect"
)

// holder keeps n leases of one agent alive, the way a client of one mode
// does, until stop; lost counts the leases that ended without being asked.
type holder struct {
	lost atomic.Int64
	stop func()
}

// holdStreams opens a streamed Acquire per key over c and reads each
// stream (the renewal messages) until stop closes them all.
func holdStreams(ctx context.Context, c lockv1connect.LockServiceClient, keys []string) (*holder, error) {
	h := &holder{}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	h.stop = func() { cancel(); wg.Wait() }
	// Each stream lives on sctx, past the call that opened it.
	err := parallel(ctx, len(keys), func(_ context.Context, i int) error {
		stream, err := c.Acquire(sctx, connect.NewRequest(&lockv1.AcquireRequest{Lock: &lockv1.LockRef{Name: keys[i]}}))
		if err != nil {
			return err
		}
		if !stream.Receive() || stream.Msg().GetGranted() == nil {
			return fmt.Errorf("%s: no grant: %w", keys[i], stream.Err())
		}
		wg.Go(func() {
			for stream.Receive() { // renewals; a loss ends the stream next
			}
			if sctx.Err() == nil { // it ended before stop closed it
				h.lost.Add(1)
			}
		})
		return nil
	})
	if err != nil {
		h.stop()
		return nil, err
	}
	return h, nil
}

// holdUnary takes a unary lease per key over c (keep-alive period period)
// and sends every lease a KeepAlive every `every` until stop releases
// them all. A refused keep-alive counts the lease as lost.
func holdUnary(ctx context.Context, c lockv1connect.LockServiceClient, keys []string, period, every time.Duration) (*holder, error) {
	ids := make([]string, len(keys))
	err := parallel(ctx, len(keys), func(ctx context.Context, i int) error {
		res, err := c.TryAcquireLease(ctx, connect.NewRequest(&lockv1.TryAcquireLeaseRequest{
			Lock: &lockv1.LockRef{Name: keys[i]}, KeepAlivePeriod: durationpb.New(period)}))
		if err != nil {
			return fmt.Errorf("%s: %w", keys[i], err)
		}
		ids[i] = res.Msg.GetLeaseId()
		return nil
	})
	h := &holder{}
	release := func() {
		_ = parallel(context.WithoutCancel(ctx), len(ids), func(ctx context.Context, i int) error {
			if ids[i] != "" {
				_, _ = c.Release(ctx, connect.NewRequest(&lockv1.ReleaseRequest{LeaseId: ids[i]})) // the agent's stop releases what this misses
			}
			return nil
		})
	}
	if err != nil {
		release()
		return nil, err
	}
	kctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-kctx.Done():
				return
			case <-t.C:
				_ = parallel(kctx, len(ids), func(ctx context.Context, i int) error {
					if _, err := c.KeepAlive(ctx, connect.NewRequest(&lockv1.KeepAliveRequest{LeaseId: ids[i]})); err != nil && ctx.Err() == nil {
						h.lost.Add(1)
					}
					return nil
				})
			}
		}
	}()
	h.stop = func() { cancel(); <-done; release() }
	return h, nil
}

// parallel calls f(0..n-1) on 32 goroutines, as an application that
// takes many leases at once would, and returns the first error.
func parallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for range min(32, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := f(ctx, i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}
