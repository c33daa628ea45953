/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package podrbac is the one definition of what a pod that takes locks
// (pkg/kube, `lockctl --lock`) may do in the Kubernetes API: `lockctl rbac`
// prints it for a pod's ServiceAccount, the pkg/kube and lockctl tests run
// bound to exactly it (proving it enough), and test/helm checks that the
// chart's podRole renders it and that docs/library.md and the CronJob
// sample show it.
package podrbac

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/redlease/redlease/api/v1alpha1"
)

// Rules are the rules of the Role a pod needs to take locks: get, list
// and watch its DistributedLocks, and get the credentials Secrets their
// status.credentialsSecretRef names (written by the controller), never any
// other Secret. Without Secret names there is no Secret rule: an empty
// resourceNames would grant every Secret.
func Rules(secretNames ...string) []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{{
		APIGroups: []string{v1alpha1.GroupVersion.Group},
		Resources: []string{"distributedlocks"},
		Verbs:     []string{"get", "list", "watch"},
	}}
	if len(secretNames) > 0 {
		rules = append(rules, rbacv1.PolicyRule{
			APIGroups:     []string{""},
			Resources:     []string{"secrets"},
			ResourceNames: append([]string(nil), secretNames...),
			Verbs:         []string{"get"},
		})
	}
	return rules
}
