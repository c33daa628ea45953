/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// secretReader serves one Secret, counting the reads; err, when set, is
// the answer instead.
type secretReader struct {
	mu     sync.Mutex
	secret corev1.Secret
	err    error
	hang   bool // no answer: Get returns when its context ends
	gets   int
}

func (r *secretReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	r.mu.Lock()
	r.gets++
	if r.hang {
		r.mu.Unlock()
		<-ctx.Done()
		return ctx.Err()
	}
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	if key.Name != r.secret.Name {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, key.Name)
	}
	r.secret.DeepCopyInto(obj.(*corev1.Secret))
	return nil
}

func (r *secretReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not implemented")
}

// update replaces the Secret's password as an update by the controller
// would, with a new resourceVersion.
func (r *secretReader) update(password, rv string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secret.Data = map[string][]byte{"password": []byte(password)}
	r.secret.ResourceVersion = rv
}

func (r *secretReader) reads() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gets
}

// TestSecretCache: the Secret is read again only when its copy is older
// than maxAge, or read for another Secret or other TLS settings; new
// connections get the password of the latest read.
func TestSecretCache(t *testing.T) {
	r := &secretReader{secret: corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", ResourceVersion: "1"},
		Data: map[string][]byte{"username": []byte("tenant"), "password": []byte("old")}}}
	c := newCredentials(newSecretCache(r), "jobs")
	ctx := t.Context()
	const age = 50 * time.Millisecond

	if _, _, err := c.load(ctx, "missing", tlsParams{}, age); !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "jobs/missing") {
		t.Fatalf("a missing Secret: %v, want ErrNotReady naming it", err)
	}
	servers, _, err := c.load(ctx, "creds", tlsParams{}, age)
	if err != nil || servers.Username != "tenant" || servers.Password != "old" {
		t.Fatalf("load = %+v, %v", servers, err)
	}
	if _, _, err := c.load(ctx, "creds", tlsParams{}, age); err != nil || r.reads() != 2 {
		t.Fatalf("a second load within maxAge read the Secret again (%d reads), %v", r.reads(), err)
	}
	if _, _, err := c.load(ctx, "creds", tlsParams{on: true}, age); err != nil || r.reads() != 3 {
		t.Fatalf("a load with other TLS settings used the old copy (%d reads), %v", r.reads(), err)
	}

	r.update("new", "2") // a rotation
	if _, pw, _ := c.serve(ctx); pw != "old" {
		t.Fatalf("a connection within maxAge got %q, want the copy's password", pw)
	}
	time.Sleep(age)
	if user, pw, err := c.serve(ctx); err != nil || user != "" || pw != "new" {
		t.Fatalf("a connection after maxAge got %q/%q, %v; want the rotated password", user, pw, err)
	}

}

// TestSecretCacheFailures: a failed re-read keeps the copy (for maxAge
// more), unless the Secret is gone or forbidden, or the copy was read for
// other TLS settings.
func TestSecretCacheFailures(t *testing.T) {
	r := &secretReader{secret: corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", ResourceVersion: "1"},
		Data: map[string][]byte{"password": []byte("new")}}}
	c := newCredentials(newSecretCache(r), "jobs")
	ctx := t.Context()
	const age = 50 * time.Millisecond
	if _, _, err := c.load(ctx, "creds", tlsParams{on: true}, age); err != nil {
		t.Fatal(err)
	}

	r.mu.Lock()
	r.err = apierrors.NewServiceUnavailable("API server down")
	r.mu.Unlock()
	time.Sleep(age)
	if _, pw, err := c.serve(ctx); err != nil || pw != "new" {
		t.Fatalf("the API server down: a connection got %q, %v; want the copy", pw, err)
	}
	reads := r.reads()
	if _, _, _ = c.serve(ctx); r.reads() != reads {
		t.Fatal("a failed re-read was tried again at once: the next connection should wait maxAge")
	}
	time.Sleep(age)
	if servers, _, err := c.load(ctx, "creds", tlsParams{on: true}, age); err != nil || servers.Password != "new" {
		t.Fatalf("an acquisition with the API server down: %+v, %v; want the copy", servers, err)
	}

	// An API server that takes connections but never answers costs an
	// acquisition at most half of its time: the copy serves.
	r.mu.Lock()
	r.hang = true
	r.mu.Unlock()
	time.Sleep(age)
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	start := time.Now()
	if servers, _, err := c.load(short, "creds", tlsParams{on: true}, age); err != nil || servers.Password != "new" {
		t.Fatalf("an acquisition with the API server not answering: %+v, %v; want the copy", servers, err)
	}
	if d := time.Since(start); d > 700*time.Millisecond || short.Err() != nil {
		t.Fatalf("the re-read took %v of the acquisition's 1s", d)
	}
	r.mu.Lock()
	r.hang, r.err = false, apierrors.NewServiceUnavailable("API server down")
	r.mu.Unlock()
	if _, _, err := c.load(ctx, "creds", tlsParams{}, age); err == nil {
		t.Fatal("an acquisition with other TLS settings and the API server down used a copy read with the old ones")
	}
	time.Sleep(age)
	r.mu.Lock()
	r.err = apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "creds", errors.New("RBAC"))
	r.mu.Unlock()
	if _, _, err := c.load(ctx, "creds", tlsParams{on: true}, age); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "needs get") {
		t.Fatalf("access revoked: %v, want the Forbidden error saying what the pod needs", err)
	}
}

// TestSecretCacheIsShared: the Lockers whose status names one Secret with
// the same TLS settings (the locks of one store, or many handles on one
// lock) share its copy: one read for all of them, then at most one per
// maxAge, however many ask at once; other TLS settings or another
// namespace's Secret of the same name are other copies.
func TestSecretCacheIsShared(t *testing.T) {
	r := &secretReader{secret: corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", ResourceVersion: "1"},
		Data: map[string][]byte{"password": []byte("pw")}}}
	cache := newSecretCache(r)
	ctx := t.Context()
	const age = 100 * time.Millisecond
	const lockers = 20
	all := func(do func(c *credentials) error) {
		t.Helper()
		views := make([]*credentials, lockers)
		for i := range views {
			views[i] = newCredentials(cache, "jobs")
		}
		errs := make(chan error, lockers)
		for _, c := range views {
			go func() { errs <- do(c) }()
		}
		for range views {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
	load := func(c *credentials) error {
		servers, _, err := c.load(ctx, "creds", tlsParams{}, age)
		if err == nil && servers.Password != "pw" {
			err = errors.New("wrong password")
		}
		return err
	}
	all(load)
	if n := r.reads(); n != 1 {
		t.Fatalf("%d Lockers read the Secret %d times, want once", lockers, n)
	}
	time.Sleep(age)
	all(func(c *credentials) error {
		if err := load(c); err != nil {
			return err
		}
		_, pw, err := c.serve(ctx)
		if pw != "pw" {
			return fmt.Errorf("serve = %q, %w", pw, err)
		}
		return err
	})
	if n := r.reads(); n != 2 {
		t.Fatalf("once the copy was maxAge old, %d Lockers read the Secret %d more times, want once", lockers, n-1)
	}
	if _, _, err := newCredentials(cache, "jobs").load(ctx, "creds", tlsParams{on: true}, age); err != nil || r.reads() != 3 {
		t.Fatalf("other TLS settings used the copy parsed without TLS (%d reads), %v", r.reads(), err)
	}
	if _, _, err := newCredentials(cache, "other").load(ctx, "creds", tlsParams{}, age); err != nil || r.reads() != 4 {
		t.Fatalf("another namespace's Secret used this one's copy (%d reads), %v", r.reads(), err)
	}
}
