/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package v1alpha1 contains API Schema definitions for the redlease v1alpha1 API group.
//
// It defines DistributedLock: a declarative distributed lock on Redis. The
// schema validates a resource without webhooks (OpenAPI bounds and CEL
// rules), and conditions.go lists every condition type and reason the
// controller reports. This package imports nothing else of redlease.
// +kubebuilder:object:generate=true
// +groupName=redlease.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is group version used to register these objects.
	GroupVersion = schema.GroupVersion{Group: "redlease.io", Version: "v1alpha1"}

	// SchemeBuilder is used to add go types to the GroupVersionKind scheme.
	// Each type registers itself in an init function; this adds the group
	// version's common meta types (ListOptions and the like).
	SchemeBuilder = runtime.NewSchemeBuilder(func(scheme *runtime.Scheme) error {
		metav1.AddToGroupVersion(scheme, GroupVersion)
		return nil
	})

	// AddToScheme adds the types in this group-version to the given scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
