/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kube_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/faultproxy"
	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/kube"
	"github.com/redlease/redlease/pkg/lock"
)

// apiRequests counts the requests a process sends the API server, by what
// they ask for ("watch distributedlocks", "get secrets", ...), and the
// watches still open. Its wrap goes into rest.Config.WrapTransport.
type apiRequests struct {
	mu      sync.Mutex
	counts  map[string]int
	watches int // open
}

func (a *apiRequests) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		what := requestKind(r)
		a.mu.Lock()
		if a.counts == nil {
			a.counts = map[string]int{}
		}
		a.counts[what]++
		a.mu.Unlock()
		resp, err := rt.RoundTrip(r)
		if err == nil && strings.HasPrefix(what, "watch ") {
			a.mu.Lock()
			a.watches++
			a.mu.Unlock()
			resp.Body = &onClose{ReadCloser: resp.Body, f: func() {
				a.mu.Lock()
				a.watches--
				a.mu.Unlock()
			}}
		}
		return resp, err
	})
}

// requestKind is "<verb> <resource>" for the API's resource paths
// (…/namespaces/NS/RESOURCE[/NAME]), "other" for the rest (discovery).
func requestKind(r *http.Request) string {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	i := len(parts) - 1
	for i >= 0 && parts[i] != "namespaces" {
		i--
	}
	if i < 0 || i+2 >= len(parts) {
		return "other"
	}
	resource, named := parts[i+2], i+3 < len(parts)
	switch {
	case r.URL.Query().Get("watch") == "true":
		return "watch " + resource
	case named:
		return "get " + resource
	}
	return "list " + resource
}

func (a *apiRequests) snapshot() (map[string]int, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	counts := map[string]int{}
	for k, v := range a.counts {
		counts[k] = v
	}
	return counts, a.watches
}

func (a *apiRequests) openWatches() int {
	_, n := a.snapshot()
	return n
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type onClose struct {
	io.ReadCloser
	once sync.Once
	f    func()
}

func (c *onClose) Close() error {
	c.once.Do(c.f)
	return c.ReadCloser.Close()
}

// TestLockersShareOneWatchAndOneSecretCopy (issue 14): 50 Lockers on 5
// locks of one namespace (a worker with many locks, goroutines each making
// a handle) make one watch of the namespace, no GET of a DistributedLock
// (one for a lock that does not exist), no discovery, and read the credentials Secret the locks share once per
// TTL, not once per Locker; acquiring through all of them does not add
// reads. The watch ends with the last Close, and the next Locker starts
// another.
func TestLockersShareOneWatchAndOneSecretCopy(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	srv := redistest.StartStandalone(t)
	const locks, perLock, rounds = 5, 10, 3
	const ttl = time.Second // the Secret's copy serves a TTL
	for i := range locks {
		name := fmt.Sprintf("job-%d", i)
		var data map[string][]byte
		if i == 0 {
			data = map[string][]byte{}
		}
		publish(t, env, createLock(t, env, ns, name, v1alpha1.DistributedLockSpec{TTL: &metav1.Duration{Duration: ttl}}), ns+"/"+name, standalone(srv.Addr()), data)
	}
	var api apiRequests
	cfg := podConfig(t, env, ns, credentialsSecret)
	cfg.WrapTransport = api.wrap

	lockers := make([]*kube.Locker, 0, locks*perLock)
	for i := range locks * perLock {
		l, err := kube.NewLocker(t.Context(), cfg, ns, fmt.Sprintf("job-%d", i%locks))
		if err != nil {
			t.Fatal(err)
		}
		lockers = append(lockers, l)
	}
	defer func() {
		for _, l := range lockers {
			_ = l.Close()
		}
	}()
	// A lock the watch does not show is looked up once: it may have been
	// created a moment ago.
	if _, err := kube.NewLocker(t.Context(), cfg, ns, "missing"); !apierrors.IsNotFound(err) {
		t.Fatalf("NewLocker on a lock that does not exist: %v, want NotFound", err)
	}
	start := time.Now()
	for round := range rounds {
		if round > 0 {
			time.Sleep(ttl) // the copy is a TTL old: read again, once
		}
		for _, l := range lockers {
			takeAndRelease(t.Context(), t, l.Acquire)
		}
	}
	elapsed := time.Since(start)
	counts, open := api.snapshot()
	t.Logf("%d Lockers on %d locks, %d acquisitions each over %v: API requests %v, watches open %d", len(lockers), locks, rounds, elapsed.Round(time.Millisecond), counts, open)
	sharedOneWatch(t, counts, open, int(elapsed/ttl)+1)

	for _, l := range lockers[1:] {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := api.openWatches(); n != 1 {
		t.Fatalf("%d watches open with one Locker left, want 1", n)
	}
	if err := lockers[0].Close(); err != nil {
		t.Fatal(err)
	}
	locktest.WaitFor(t, 20*time.Second, "the closed Locker's watch to end", func() bool { return api.openWatches() == 0 })
	again := newKubeLocker(t, cfg, ns, "job-0")
	if n := api.openWatches(); n != 1 || again.Key() != ns+"/job-0" {
		t.Fatalf("a Locker after the last Close: %d watches open, key %q; want a new watch", n, again.Key())
	}
}

// sharedOneWatch checks the requests of Lockers of one namespace and one
// NewLocker on a missing lock: one watch, open; one GET of a lock; no
// discovery; at most secretReads reads of their Secret.
func sharedOneWatch(t *testing.T, counts map[string]int, open, secretReads int) {
	t.Helper()
	watches := counts["watch distributedlocks"] + counts["list distributedlocks"]
	if watches != 1 || open != 1 {
		t.Errorf("%d lists and watches of distributedlocks (%d open), want one for the namespace", watches, open)
	}
	if n := counts["get distributedlocks"]; n != 1 {
		t.Errorf("%d GETs of a DistributedLock, want one (of the missing lock): the watch has the others", n)
	}
	if n := counts["get secrets"]; n > secretReads {
		t.Errorf("%d reads of the credentials Secret, want at most one per TTL (%d)", n, secretReads)
	}
	if n := counts["other"]; n != 0 {
		t.Errorf("%d other requests (discovery?), want none", n)
	}
}

// takeAndRelease takes a lease with take (a Locker's Acquire or
// TryAcquire), failing t if it cannot, and releases it.
func takeAndRelease(ctx context.Context, t *testing.T, take func(context.Context) (*lock.Lease, error)) *lock.Lease {
	t.Helper()
	lease, err := take(ctx)
	if err != nil {
		t.Fatalf("no lease: %v", err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	return lease
}

// TestAPIServerBlip (issue 14): the API server goes away after the
// Lockers have read their locks — its connections closed and new ones
// refused (down, restarting), or its requests never answered — while Redis
// stays healthy. Acquisitions on a Ready lock go on from the last state
// seen, with the credentials Secret's copy past its age (the re-read
// refused, or given up in time); a new Locker on a lock the process
// already watches is made without the API server. Once it is back, the
// watch resumes: a lock deleted meanwhile is no longer acquired (held
// leases stay), a spec change made meanwhile applies to the next
// acquisition, and a lock created since is found.
func TestAPIServerBlip(t *testing.T) {
	for _, tc := range []struct {
		name        string
		fault, heal func(*faultproxy.Proxy)
		// The watch cannot bring the changes made during the fault; when
		// requests are unanswered, the API server's events still reach the
		// pod on a connection opened before.
		changesLate bool
	}{
		{"up", func(*faultproxy.Proxy) {}, func(*faultproxy.Proxy) {}, false},
		{"refused", (*faultproxy.Proxy).Cut, (*faultproxy.Proxy).Restore, true},
		{"unanswered", (*faultproxy.Proxy).BlackHole, (*faultproxy.Proxy).Reset, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := kubetest.Shared(t)
			ns := env.Namespace(t)
			srv := redistest.StartStandalone(t)
			kept, removed := createLock(t, env, ns, "kept", blipSpec), createLock(t, env, ns, "removed", blipSpec)
			publish(t, env, kept, ns+"/kept", standalone(srv.Addr()), map[string][]byte{})
			publish(t, env, removed, ns+"/removed", standalone(srv.Addr()), nil)

			cfg := podConfig(t, env, ns, credentialsSecret)
			proxy := throughProxy(t, cfg)
			l := newKubeLocker(t, cfg, ns, "kept")
			gone := newKubeLocker(t, cfg, ns, "removed")
			takeAndRelease(t.Context(), t, l.TryAcquire) // reads the Secret
			held, err := gone.TryAcquire(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			releaseAtEnd(t, held)

			tc.fault(proxy)
			// The controller and the users go on meanwhile (not through the proxy).
			if err := env.Client.Delete(t.Context(), removed); err != nil {
				t.Fatal(err)
			}
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(kept), kept); err != nil {
				t.Fatal(err)
			}
			kept.Spec.Fencing = &v1alpha1.FencingSpec{Enabled: ptr.To(false)} // not the TTL: it sets the Secret copy's age
			if err := env.Client.Update(t.Context(), kept); err != nil {
				t.Fatal(err)
			}
			time.Sleep(blipTTL + blipTTL/5) // the Secret's copy is now older than it may be without trying to read it again
			acquiresFromTheLastState(t, cfg, l, tc.changesLate)

			tc.heal(proxy)
			locktest.WaitFor(t, 20*time.Second, "ErrNotReady naming the deleted lock", func() bool {
				_, err := gone.TryAcquire(t.Context())
				return errors.Is(err, kube.ErrNotReady) && strings.Contains(err.Error(), "deleted")
			})
			_, err = gone.TryAcquire(t.Context())
			t.Logf("the lock deleted meanwhile: %v", err)
			if err := held.Err(); err != nil {
				t.Fatalf("the lease held on the deleted lock: %v (the deletion leaves Redis alone)", err)
			}
			locktest.WaitFor(t, 20*time.Second, "a lease without a fence, as the lock now says", func() bool {
				lease, err := l.TryAcquire(t.Context())
				return err == nil && lease.Release(t.Context()) == nil && lease.Fence() == 0
			})
			publish(t, env, createLock(t, env, ns, "later", blipSpec), ns+"/later", standalone(srv.Addr()), nil)
			later := newKubeLocker(t, cfg, ns, "later")
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			takeAndRelease(ctx, t, later.Acquire) // Acquire: the watch may bring the status a moment after the lock
		})
	}
}

// The locks of TestAPIServerBlip: a TTL of 1s, so the credentials Secret's
// copy serves 1s.
const blipTTL = time.Second

var blipSpec = v1alpha1.DistributedLockSpec{TTL: &metav1.Duration{Duration: blipTTL}}

// acquiresFromTheLastState checks, with the API server away, that l
// acquires within a 3s context (TryAcquire, then Acquire) from the state
// last seen (with changesLate: fencing on), and that a new Locker on its
// lock is made and acquires.
func acquiresFromTheLastState(t *testing.T, cfg *rest.Config, l *kube.Locker, changesLate bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	start := time.Now()
	lease := takeAndRelease(ctx, t, l.TryAcquire)
	t.Logf("TryAcquire during the fault took %v", time.Since(start))
	if changesLate && lease.Fence() == 0 {
		t.Error("no fence during the fault: the spec change reached the pod without the API server?")
	}
	takeAndRelease(ctx, t, l.Acquire)
	r := l.Resource()
	another, err := kube.NewLocker(ctx, cfg, r.Namespace, r.Name, lock.WithIdentity("another"))
	if err != nil {
		t.Fatalf("NewLocker on a lock the process watches: %v", err)
	}
	takeAndRelease(ctx, t, another.TryAcquire)
	if err := another.Close(); err != nil {
		t.Fatal(err)
	}
}

// throughProxy points cfg at a proxy to its API server and returns the
// proxy.
func throughProxy(t *testing.T, cfg *rest.Config) *faultproxy.Proxy {
	t.Helper()
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := faultproxy.New(t, u.Host)
	u.Host = proxy.Addr()
	cfg.Host = u.String()
	return proxy
}
