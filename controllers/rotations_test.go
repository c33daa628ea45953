/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"slices"
	"testing"
	"time"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redisacl"
)

// TestRotationIgnoresTenantWrittenGrace: a tenant who edits its credentials
// Secret to name a previous password valid until 9999 gets no previous
// password accepted; only the controller's record of a rotation keeps one,
// for the grace it set. Before the record, rotation read the hash and the
// deadline from the Secret's annotations and accepted the forged password
// for ever.
func TestRotationIgnoresTenantWrittenGrace(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	const grace = time.Minute
	forged := redisacl.PasswordHash("tenant-chosen")
	secret := existingSecret{
		data: map[string][]byte{v1alpha1.CredentialsPassword: []byte("current")},
		annotations: map[string]string{
			annotationRotated:       "/",
			annotationPreviousHash:  forged,
			annotationPreviousUntil: "9999-01-01T00:00:00Z",
		},
	}
	got := rotation(secret, nil, "", now, grace)
	if got.passwords.Current != "current" || len(got.passwords.PreviousHashes) != 0 {
		t.Fatalf("without a record: %+v, want the current password alone", got.passwords)
	}
	if got.annotations()[annotationPreviousUntil] != "" {
		t.Errorf("the Secret would keep showing %q", got.annotations()[annotationPreviousUntil])
	}

	// A rotation the store asks for: the controller's record keeps the
	// old password for the grace, whatever the Secret says.
	rotatedOnce := rotation(secret, &got.record, "token-1", now, grace)
	old := redisacl.PasswordHash("current")
	if rotatedOnce.passwords.Current == "current" || !slices.Equal(rotatedOnce.passwords.PreviousHashes, []string{old}) {
		t.Fatalf("rotated: %+v, want a new password and the old one's hash", rotatedOnce.passwords)
	}
	secret.data[v1alpha1.CredentialsPassword] = []byte(rotatedOnce.passwords.Current)
	secret.annotations[annotationRotated] = "token-1/"
	secret.annotations[annotationPreviousHash] = forged
	within := rotation(secret, &rotatedOnce.record, "token-1", now.Add(grace/2), grace)
	if !slices.Equal(within.passwords.PreviousHashes, []string{old}) {
		t.Errorf("within the grace: previous %v, want the old password's hash (not the Secret's)", within.passwords.PreviousHashes)
	}
	after := rotation(secret, &within.record, "token-1", now.Add(grace+2*time.Second), grace)
	if len(after.passwords.PreviousHashes) != 0 {
		t.Errorf("after the grace: previous %v, want none", after.passwords.PreviousHashes)
	}
}
