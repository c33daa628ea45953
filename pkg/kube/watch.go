/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kube

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/redlease/redlease/api/v1alpha1"
)

// namespaceWatch follows every DistributedLock of one namespace for all the
// Lockers of one apiClient there: one list and one watch, whatever their
// number (client-go's reflector: list+watch, re-listing after the watch
// ends, with backoff while the API server is unreachable). Each event goes
// to the Lockers of its resource, in the order the API server sent them.
//
// While the API server is unreachable the last versions seen stay: the
// Lockers acquire from them (see the package doc for what that does not
// guarantee), and the re-list once it is back brings what changed
// meanwhile, deletions included.
type namespaceWatch struct {
	client    *apiClient
	namespace string
	refs      int // Lockers; guarded by registry.mu

	stop   func()        // ends the informer and waits for it
	done   chan struct{} // closed when the informer has ended
	synced cache.DoneChecker

	mu      sync.Mutex
	objs    map[string]*v1alpha1.DistributedLock // as the handler last saw them; shared, never modified
	lockers map[string][]*Locker
	events  chan struct{} // closed and replaced by every event; nil when nobody waits
	failed  chan struct{} // closed and replaced by every failed list or watch; nil when nobody waits
	err     error         // of the last failed list or watch
}

// startWatch starts the watch of namespace through c, in a goroutine.
func startWatch(c *apiClient, namespace string) *namespaceWatch {
	w := &namespaceWatch{client: c, namespace: namespace, done: make(chan struct{}),
		objs: map[string]*v1alpha1.DistributedLock{}, lockers: map[string][]*Locker{}}
	lw := cache.NewListWatchFromClient(c.locks, "distributedlocks", namespace, fields.Everything())
	// Wrapped to see failures: a Locker waiting for the first list reports
	// the API server's answer (Forbidden, not found, unreachable) instead
	// of waiting for its context.
	reporting := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			obj, err := lw.ListWithContext(ctx, o)
			w.report(err)
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			wi, err := lw.WatchWithContext(ctx, o)
			// The API server's refusal of a watch-list request (a streamed
			// list, which one that predates or disables it refuses) is
			// followed by a plain list: that answer counts, not this one.
			var status apierrors.APIStatus
			if o.SendInitialEvents == nil || !errors.As(err, &status) {
				w.report(err)
			}
			return wi, err
		},
	}
	// NewInformerWithOptions, not a SharedInformer: its handler runs in the
	// goroutine that pops the queue, so objs follows the API server's
	// order, and a Locker registered from objs sees every later version.
	_, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: reporting,
		ObjectType:    &v1alpha1.DistributedLock{},
		Handler:       cache.ResourceEventHandlerFuncs{AddFunc: w.put, UpdateFunc: func(_, obj any) { w.put(obj) }, DeleteFunc: w.drop},
		Transform:     stripManagedFields,
	})
	w.synced = ctrl.HasSyncedChecker()
	ctx, cancel := context.WithCancel(context.Background())
	w.stop = func() {
		cancel()
		<-w.done
	}
	go func() {
		defer close(w.done)
		ctrl.RunWithContext(ctx)
	}()
	return w
}

// stripManagedFields drops what pods never read from the copies kept for
// every lock of the namespace.
func stripManagedFields(obj any) (any, error) {
	if dl, ok := obj.(*v1alpha1.DistributedLock); ok {
		dl.ManagedFields = nil
	}
	return obj, nil
}

func (w *namespaceWatch) report(err error) {
	if err == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
	if w.failed != nil {
		close(w.failed)
		w.failed = nil
	}
}

func (w *namespaceWatch) put(obj any) {
	dl, ok := obj.(*v1alpha1.DistributedLock)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.objs[dl.Name] = dl
	for _, l := range w.lockers[dl.Name] {
		l.observe(dl)
	}
	w.tick()
}

func (w *namespaceWatch) drop(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	_, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.objs, name)
	for _, l := range w.lockers[name] {
		l.deleted()
	}
	w.tick()
}

// tick wakes the adds waiting for the watch. Callers hold w.mu.
func (w *namespaceWatch) tick() {
	if w.events != nil {
		close(w.events)
		w.events = nil
	}
}

// How long add waits for the watch to bring a DistributedLock a GET found
// before it makes the GET again.
const watchLagRetry = time.Second

// add registers l for the resource name and sets its first version: the
// watch's. It waits, bounded by ctx, for the watch's first list, and fails
// with the API server's answer when that list (or its retry) fails
// meanwhile. A resource the watch has not shown is read with a GET:
// absent, add fails with its NotFound; present (created a moment ago), add
// waits for the watch to bring the version the GET found (resource
// versions are compared for equality only), so that l sees its versions
// in order from that one on. The GET is made again every watchLagRetry
// meanwhile: the resource may have changed again, past a version the
// watch skips when it re-lists, or been deleted.
func (w *namespaceWatch) add(ctx context.Context, name string, l *Locker) error {
	what := fmt.Sprintf("kube: reading DistributedLock %s/%s", w.namespace, name)
	if err := w.firstList(ctx); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	var getAgain time.Time // the first time round: at once
	var want string        // the resourceVersion the GET found
	for {
		w.mu.Lock()
		if dl, ok := w.objs[name]; ok && (want == "" || dl.ResourceVersion == want) {
			l.obj = dl
			w.lockers[name] = append(w.lockers[name], l)
			w.mu.Unlock()
			return nil
		}
		if w.events == nil {
			w.events = make(chan struct{})
		}
		events := w.events
		w.mu.Unlock()

		if !time.Now().Before(getAgain) {
			var dl v1alpha1.DistributedLock
			if err := w.client.reader.Get(ctx, types.NamespacedName{Namespace: w.namespace, Name: name}, &dl); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			want, getAgain = dl.ResourceVersion, time.Now().Add(watchLagRetry)
		}
		if err := waitForChange(ctx, events, max(time.Until(getAgain), time.Millisecond)); err != nil {
			return fmt.Errorf("%s: waiting for the watch to show it: %w", what, err)
		}
	}
}

// firstList waits for the watch's first list, bounded by ctx; it returns
// the error of a list or watch that fails meanwhile.
func (w *namespaceWatch) firstList(ctx context.Context) error {
	w.mu.Lock()
	if w.failed == nil {
		w.failed = make(chan struct{})
	}
	failed := w.failed
	w.mu.Unlock()
	select {
	case <-w.synced.Done():
		return nil
	case <-failed:
		select {
		case <-w.synced.Done(): // the failure came after the list
			return nil
		default:
		}
		w.mu.Lock()
		err := w.err
		w.mu.Unlock()
		if apierrors.IsNotFound(err) { // the resource type, not the lock
			return fmt.Errorf("%w (are the redlease CRDs installed?)", err)
		}
		return err
	case <-ctx.Done():
		return fmt.Errorf("waiting for the list of the namespace's DistributedLocks: %w", context.Cause(ctx))
	}
}

// remove stops sending l the resource's events.
func (w *namespaceWatch) remove(name string, l *Locker) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ls := w.lockers[name]
	for i, x := range ls {
		if x == l {
			ls = append(ls[:i:i], ls[i+1:]...)
			break
		}
	}
	if len(ls) == 0 {
		delete(w.lockers, name)
	} else {
		w.lockers[name] = ls
	}
}
