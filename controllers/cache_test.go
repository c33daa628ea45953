/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/redlease/redlease/api/v1alpha1"
)

// TestCacheKeepsNoSecretData: the manager's cache holds a Secret's metadata
// without kubectl's last-applied-configuration annotation (which carries
// the Secret's data) and without managedFields, but keeps the controller's
// own annotations (a rotation request); cached locks carry no
// managedFields either.
func TestCacheKeepsNoSecretData(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "applied", Annotations: map[string]string{
		corev1.LastAppliedConfigAnnotation: `{"apiVersion":"v1","kind":"Secret","data":{"password":"c2VjcmV0"}}`,
		v1alpha1.AnnotationRotate:          "2026-12-01",
		"team.example.com/owner":           "payments",
	}}, StringData: map[string]string{"password": "secret"}}
	if err := h.c.Create(h.ctx(), s); err != nil {
		t.Fatal(err)
	}
	h.create("cached", standaloneSpec("127.0.0.1:1"))
	h.eventually("the cached Secret stripped", func() error {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		if err := h.r.kube.Get(h.ctx(), types.NamespacedName{Namespace: h.ns, Name: "applied"}, m); err != nil {
			return err
		}
		if ann := m.GetAnnotations(); len(ann) != 1 || ann[v1alpha1.AnnotationRotate] != "2026-12-01" {
			return fmt.Errorf("cached annotations %v, want only %s", ann, v1alpha1.AnnotationRotate)
		}
		if len(m.GetManagedFields()) != 0 {
			return errors.New("the cached Secret keeps its managedFields")
		}
		var dl v1alpha1.DistributedLock
		if err := h.r.kube.Get(h.ctx(), types.NamespacedName{Namespace: h.ns, Name: "cached"}, &dl); err != nil {
			return err
		}
		if len(dl.ManagedFields) != 0 {
			return errors.New("the cached lock keeps its managedFields")
		}
		return nil
	})
}
