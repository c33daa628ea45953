/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redisacl"
)

// Annotations the controller writes on a tenant's credentials Secret to
// show a password rotation. The tenant can edit that Secret, so they
// decide nothing but annotationRotated after a manager restart: the
// previous password's hash and grace come from the controller's own
// record (rotationRecords), else a tenant could keep an old password
// valid forever.
const (
	// annotationRotated is the rotate request last honoured: the store's
	// redlease.io/rotate, "/", the Secret's.
	annotationRotated = "redlease.io/rotated"
	// annotationPreviousHash is the hash of the password before the last
	// rotation, still accepted until annotationPreviousUntil.
	annotationPreviousHash  = "redlease.io/previous-password-hash"
	annotationPreviousUntil = "redlease.io/previous-password-until"
)

// minRotationGrace is the shortest time an old password stays valid.
const minRotationGrace = 10 * time.Second

// rotationRecord is the controller's record of a tenant's last rotation:
// the request it honoured, and the previous password's hash and until when
// it is still accepted (zero: none).
type rotationRecord struct {
	rotated  string
	prevHash string
	until    time.Time
}

type rotationKey struct {
	store     types.UID
	namespace string
}

// rotationRecords keeps the records in memory. A manager restart forgets
// them: a rotation's grace then ends early (connections already open stay
// authenticated; new ones use the Secret's new password).
type rotationRecords struct {
	mu sync.Mutex
	m  map[rotationKey]rotationRecord
}

func newRotationRecords() *rotationRecords {
	return &rotationRecords{m: map[rotationKey]rotationRecord{}}
}

// get returns k's record, nil when there is none.
func (r *rotationRecords) get(k rotationKey) *rotationRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.m[k]
	if !ok {
		return nil
	}
	return &rec
}

func (r *rotationRecords) put(k rotationKey, rec rotationRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[k] = rec
}

// forget drops the records of a deleted store.
func (r *rotationRecords) forget(store types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.m {
		if k.store == store {
			delete(r.m, k)
		}
	}
}

// rotated is a tenant's passwords after a rotation step, and the record of
// that step.
type rotated struct {
	passwords redisacl.Passwords
	record    rotationRecord
}

// annotations show the step on the credentials Secret.
func (r rotated) annotations() map[string]string {
	until := ""
	if !r.record.until.IsZero() {
		until = r.record.until.Format(time.RFC3339)
	}
	return map[string]string{
		annotationRotated:       r.record.rotated,
		annotationPreviousHash:  r.record.prevHash,
		annotationPreviousUntil: until,
	}
}

// rotation decides a tenant's passwords from its Secret (cur), the
// controller's record of its last rotation (rec, nil when the manager has
// none since it started) and the store's rotate request: the current
// password kept, or a new one when there is none or a rotation was
// requested since the last one (the old one then stays accepted until
// now+grace).
func rotation(cur existingSecret, rec *rotationRecord, storeToken string, now time.Time, grace time.Duration) rotated {
	if rec == nil {
		// Which request was honoured last is all a Secret may say: a
		// tenant who rewrites it rotates, or does not rotate, its own
		// password, and no previous one stays accepted.
		rec = &rotationRecord{rotated: cur.annotations[annotationRotated]}
	}
	want := storeToken + "/" + cur.annotations[v1alpha1.AnnotationRotate]
	next := rotationRecord{rotated: want, prevHash: rec.prevHash, until: rec.until}
	pw := string(cur.data[v1alpha1.CredentialsPassword])
	switch {
	case pw == "":
		pw, next.prevHash, next.until = redisacl.NewPassword(), "", time.Time{}
	case rec.rotated != want:
		// now (the round's clock) and RFC 3339 keep whole seconds: round
		// up, so that the old password stays accepted at least grace.
		next.prevHash, next.until = redisacl.PasswordHash(pw), now.Add(grace+time.Second).UTC().Truncate(time.Second)
		pw = redisacl.NewPassword()
	}
	if !now.Before(next.until) {
		next.prevHash, next.until = "", time.Time{}
	}
	out := rotated{passwords: redisacl.Passwords{Current: pw}, record: next}
	if next.prevHash != "" {
		out.passwords.PreviousHashes = []string{next.prevHash}
	}
	return out
}
