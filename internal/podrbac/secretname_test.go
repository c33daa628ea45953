/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package podrbac

import (
	"strings"
	"testing"

	"github.com/redlease/redlease/api/v1alpha1"
)

// TestSecretNamesDoNotCollide: a ClusterLockStore, a LockStore and an
// inline lock whose names differ by the other kinds' prefixes get
// different credentials Secrets. Before, ClusterLockStore "lock-x" got the
// Secret of inline lock "x" ("redlease-lock-x"), and "lockstore-x" that of
// LockStore "x".
func TestSecretNamesDoNotCollide(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 250)
	type owner struct {
		kind v1alpha1.StoreKind
		name string
	}
	seen := map[string]owner{}
	for _, name := range []string{"x", "lock-x", "lockstore-x", "clusterlockstore-x", "clusterlockstore-lock-x", "clusterlockstore-clusterlockstore-x", long, "lock-" + long, "clusterlockstore-lock-" + long} {
		for _, kind := range []v1alpha1.StoreKind{v1alpha1.StoreKindClusterLockStore, v1alpha1.StoreKindLockStore, ""} {
			secret := SecretName(kind, name)
			if len(secret) > maxSecretName {
				t.Errorf("%s %q: Secret name of %d bytes", kind, name, len(secret))
			}
			if other, ok := seen[secret]; ok {
				t.Errorf("%s %q and %s %q both get Secret %q", other.kind, other.name, kind, name, secret)
			}
			seen[secret] = owner{kind, name}
		}
	}
}
