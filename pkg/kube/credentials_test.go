/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kube

import (
	"context"
	"errors"
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
	gets   int
}

func (r *secretReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gets++
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
	c := &secretCache{reader: r, namespace: "jobs"}
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
	c := &secretCache{reader: r, namespace: "jobs"}
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
