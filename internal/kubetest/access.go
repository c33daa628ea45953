/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kubetest

import (
	"context"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
)

// WaitForAccess waits until the API server's authorizer lets user do verb
// on resource (group "" for the core group) in namespace ns. The RBAC
// authorizer reads Roles and RoleBindings from its informers, so a binding
// just created may not count for a few milliseconds: a test that creates
// one and impersonates its subject at once can be refused.
func (e *Env) WaitForAccess(t testing.TB, user, ns, verb, group, resource string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               user,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: resource},
		}}
		err := e.Client.Create(ctx, review)
		if err == nil && review.Status.Allowed {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("kubetest: %s may not %s %s in %s after 30s: %v (%s)", user, verb, resource, ns, err, review.Status.Reason)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
