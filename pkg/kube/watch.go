package kube

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/backoff"
)

func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, v1alpha1.AddToScheme(s)
}

// follow watches the one resource and records every version it sees,
// re-listing after the watch ends (API server restarts, timeouts, 410 Gone).
func (l *Locker) follow(ctx context.Context, c client.WithWatch, resourceVersion string) {
	defer close(l.watchDone)
	retry := backoff.Exponential{Min: 100 * time.Millisecond, Max: 10 * time.Second}
	for ctx.Err() == nil {
		w, err := c.Watch(ctx, &v1alpha1.DistributedLockList{},
			client.InNamespace(l.namespace),
			client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", l.name)},
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: resourceVersion, AllowWatchBookmarks: true}})
		if err == nil {
			resourceVersion = l.drain(ctx, w, resourceVersion)
			retry.Reset()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry.Next()):
		}
		// Re-read: the resource may have changed while no watch was open.
		var dl v1alpha1.DistributedLock
		if err := c.Get(ctx, client.ObjectKey{Namespace: l.namespace, Name: l.name}, &dl); err == nil {
			l.observe(&dl)
			resourceVersion = dl.ResourceVersion
		}
	}
}

// drain handles one watch until it ends and returns the last version seen.
func (l *Locker) drain(ctx context.Context, w watch.Interface, rv string) string {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return rv
		case ev, ok := <-w.ResultChan():
			if !ok {
				return rv
			}
			dl, isLock := ev.Object.(*v1alpha1.DistributedLock)
			if !isLock {
				return rv // an error event: re-list
			}
			rv = dl.ResourceVersion
			if ev.Type == watch.Added || ev.Type == watch.Modified {
				l.observe(dl)
			}
		}
	}
}
