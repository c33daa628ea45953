/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package podrbac

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/redlease/redlease/api/v1alpha1"
)

// maxSecretName is the longest name a Secret may have (a DNS subdomain).
const maxSecretName = 253

// SecretName is the name of the credentials Secret the controller writes,
// in each namespace it serves, for the store of that kind and name, or for
// the inline lock of that name when kind is neither store kind. It is the
// one derivation: the controller writes under it and the chart's podRole
// grants it from lock names (TestPodRoleGrantsTheSecretsOfItsLocks).
//
// No two stores or inline locks get one name: a ClusterLockStore's name that
// starts like the other kinds' ("lock-", "lockstore-") moves under
// "clusterlockstore-", and so does one that starts with that
// (TestSecretNamesDoNotCollide). A hash replaces the tail of names too
// long for a Secret.
func SecretName(kind v1alpha1.StoreKind, name string) string {
	var full string
	switch kind {
	case v1alpha1.StoreKindClusterLockStore:
		for _, reserved := range []string{"lock-", "lockstore-", "clusterlockstore-"} {
			if strings.HasPrefix(name, reserved) {
				name = "clusterlockstore-" + name
				break
			}
		}
		full = "redlease-" + name
	case v1alpha1.StoreKindLockStore:
		full = "redlease-lockstore-" + name
	default:
		full = "redlease-lock-" + name
	}
	if len(full) <= maxSecretName {
		return full
	}
	sum := sha256.Sum256([]byte(full))
	return strings.TrimRight(full[:maxSecretName-11], ".-") + "-" + hex.EncodeToString(sum[:])[:10]
}

// LockSecretName is the credentials Secret the pods of dl read:
// spec.credentialsSecretName when set, else the name SecretName derives
// from its store, or for an inline lock from the lock. The controller
// writes under it and `lockctl rbac` grants it from a manifest with no
// status (TestRBACFromAManifestMatchesTheReconciledLock).
func LockSecretName(dl *v1alpha1.DistributedLock) string {
	if dl.Spec.CredentialsSecretName != "" {
		return dl.Spec.CredentialsSecretName
	}
	if ref := dl.Spec.StoreRef; ref != nil {
		return SecretName(ref.Kind, ref.Name)
	}
	return SecretName("", dl.Name)
}
