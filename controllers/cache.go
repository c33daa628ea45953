/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/redlease/redlease/api/v1alpha1"
)

// CacheTransform keeps of each cached object only what the controller
// reads: managedFields go, and so does every annotation but the
// controller's own (redlease.io/…, such as the rotation request). Besides
// the memory, this matters for Secrets: their metadata is cached, and
// kubectl's last-applied-configuration annotation holds a Secret's whole
// data. Set it as the manager's cache DefaultTransform.
func CacheTransform() toolscache.TransformFunc {
	return func(obj any) (any, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return obj, nil // not an object (a tombstone): nothing to strip
		}
		m.SetManagedFields(nil)
		if ann := m.GetAnnotations(); len(ann) > 0 {
			kept := map[string]string{}
			for k, v := range ann {
				if strings.HasPrefix(k, annotationDomain) {
					kept[k] = v
				}
			}
			if len(kept) == 0 {
				kept = nil
			}
			m.SetAnnotations(kept)
		}
		return obj, nil
	}
}

// annotationDomain prefixes the annotations the controller reads.
var annotationDomain = strings.SplitAfter(v1alpha1.AnnotationRotate, "/")[0]
