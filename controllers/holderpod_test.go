package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redistest"
	"github.com/redlease/redlease/pkg/lock"
)

// podReads counts the Pod reads that go through a reader, per pod name.
type podReads struct {
	client.Reader
	mu    sync.Mutex
	names map[string]int
}

func (c *podReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Pod); ok {
		c.mu.Lock()
		c.names[key.Name]++
		c.mu.Unlock()
	}
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c *podReads) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*corev1.PodList); ok {
		return errors.New("the controller must not list pods")
	}
	return c.Reader.List(ctx, list, opts...)
}

func (c *podReads) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.names[name]
}

// createPod creates a pod on node in ns: envtest has no kubelet, but a pod
// object with spec.nodeName is all the controller reads.
func createPod(t *testing.T, c client.Client, ns, name, node string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:1"}}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := c.Create(ctx, pod); err != nil {
		t.Fatalf("creating pod %s/%s: %v", ns, name, err)
	}
}

// holderOnPod checks status.holder: identity, and the pod and node it
// names ("" for none).
func holderOnPod(identity, pod, node string) func(*v1alpha1.DistributedLock) error {
	return func(dl *v1alpha1.DistributedLock) error {
		h := dl.Status.Holder
		switch {
		case h == nil:
			return errors.New("no holder in status")
		case h.Identity != identity || h.Pod != pod || h.Node != node:
			return fmt.Errorf("holder %q pod %q node %q, want %q pod %q node %q", h.Identity, h.Pod, h.Node, identity, pod, node)
		}
		return nil
	}
}

// TestHolderPod: status.holder names the pod of the lock's namespace that
// the holder's identity names — the library's default "<pod>:<pid>", or a
// pod name alone — and that pod's node; a standby taking over moves both.
// An identity naming no pod (none by that name, one only in another
// namespace, or not a pod name at all) leaves them empty. The pod is read
// once per new holder identity, with a GET (never a list), not on every
// reconcile of a lock that stays held.
func TestHolderPod(t *testing.T) {
	t.Parallel()
	reads := &podReads{names: map[string]int{}}
	h := newHarness(t, harnessOptions{probeInterval: 300 * time.Millisecond, namespaces: 1,
		apiReader: func(r client.Reader) client.Reader { reads.Reader = r; return reads }})
	srv := redistest.StartStandalone(t)
	h.create("leader", standaloneSpec(srv.Addr()))
	h.waitFor("leader", "Ready", isReady)
	key := protocol.DefaultKey(h.ns, "leader")
	createPod(t, h.c, h.ns, "web-7f9c-a", "node-a")
	createPod(t, h.c, h.ns, "web-7f9c-b", "node-b")
	createPod(t, h.c, h.extra[0], "elsewhere", "node-c")

	// hold takes the lock as identity and waits for cond on the status,
	// then lets five more reconciles run while it holds.
	hold := func(identity string, cond func(*v1alpha1.DistributedLock) error) *lock.Lease {
		t.Helper()
		lease, err := newLocker(t, srv.Client(t), lock.WithIdentity(identity), lock.WithTTL(10*time.Second)).TryAcquire(h.ctx(), key)
		if err != nil {
			t.Fatal(err)
		}
		releaseAtEnd(t, lease)
		h.waitFor("leader", "holder "+identity, cond)
		c := h.counter("leader")
		n := c.Load()
		h.eventually("five more reconciles", func() error {
			if c.Load() < n+5 {
				return errNotYet
			}
			return nil
		})
		h.waitFor("leader", "holder "+identity+" still", cond)
		return lease
	}
	release := func(l *lock.Lease) {
		t.Helper()
		if err := l.Release(h.ctx()); err != nil {
			t.Fatal(err)
		}
	}

	// The default identity: pod name and pid.
	a := hold("web-7f9c-a:1", holderOnPod("web-7f9c-a:1", "web-7f9c-a", "node-a"))
	release(a)
	// A standby on another node takes over; its identity is the pod name alone.
	b := hold("web-7f9c-b", holderOnPod("web-7f9c-b", "web-7f9c-b", "node-b"))
	release(b)
	if n, m := reads.count("web-7f9c-a"), reads.count("web-7f9c-b"); n != 1 || m != 1 {
		t.Errorf("pod reads: web-7f9c-a %d, web-7f9c-b %d; want one each (per new holder, not per reconcile)", n, m)
	}

	// Names that are no pod of the lock's namespace.
	for _, tc := range []struct {
		identity, name string
		reads          int
	}{
		{"nobody-here:42", "nobody-here", 1}, // no such pod
		{"elsewhere:7", "elsewhere", 1},      // only in another namespace
		{"Cron_Job:1", "Cron_Job", 0},        // not a pod name: not looked up
	} {
		release(hold(tc.identity, holderOnPod(tc.identity, "", "")))
		if n := reads.count(tc.name); n != tc.reads {
			t.Errorf("%s: %d reads of pod %s, want %d", tc.identity, n, tc.name, tc.reads)
		}
	}
}

// TestPodNameOf: which pod name an identity names.
func TestPodNameOf(t *testing.T) {
	for _, tc := range []struct {
		identity, want string
		ok             bool
	}{
		{"web-7f9c-x2:1", "web-7f9c-x2", true}, // the default: POD_NAME and pid
		{"web-7f9c-x2", "web-7f9c-x2", true},   // a pod name alone
		{"web-0.shard:42", "web-0.shard", true},
		{"host:8080:17", "", false}, // "host:8080" is no pod name
		{"worker:blue", "", false},  // no pid after the colon
		{"Cron_Job:1", "", false},   // not DNS-1123
		{":1", "", false},           // nothing before the pid
		{"(unrecognized value)", "", false},
		{strings.Repeat("a", 254) + ":1", "", false}, // longer than a name may be
	} {
		got, ok := podNameOf(tc.identity)
		if got != tc.want || ok != tc.ok {
			t.Errorf("podNameOf(%q) = %q, %v; want %q, %v", tc.identity, got, ok, tc.want, tc.ok)
		}
	}
}
