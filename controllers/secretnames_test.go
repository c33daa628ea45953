/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"strings"
	"testing"

	"github.com/redlease/redlease/api/v1alpha1"
)

// TestCredentialsSecretNamesDoNotCollide: a ClusterLockStore, a LockStore
// and an inline lock whose names differ by the other kinds' prefixes get
// different credentials Secrets. Before, ClusterLockStore "lock-x" got the
// Secret of inline lock "x" ("redlease-lock-x"), and "lockstore-x" that of
// LockStore "x".
func TestCredentialsSecretNamesDoNotCollide(t *testing.T) {
	long := strings.Repeat("a", 250)
	var specs []*storeSpec
	for _, name := range []string{"x", "lock-x", "lockstore-x", "clusterlockstore-x", "clusterlockstore-lock-x", "clusterlockstore-clusterlockstore-x", long, "lock-" + long, "clusterlockstore-lock-" + long} {
		for _, kind := range []string{string(v1alpha1.StoreKindClusterLockStore), string(v1alpha1.StoreKindLockStore), ""} {
			specs = append(specs, &storeSpec{kind: kind, name: name})
		}
	}
	seen := map[string]*storeSpec{}
	for _, st := range specs {
		name := credentialsSecretName(st)
		if len(name) > 253 {
			t.Errorf("%s %q: Secret name of %d bytes", st.kind, st.name, len(name))
		}
		if other, ok := seen[name]; ok {
			t.Errorf("%s %q and %s %q both get Secret %q", other.kind, other.name, st.kind, st.name, name)
		}
		seen[name] = st
	}
}
