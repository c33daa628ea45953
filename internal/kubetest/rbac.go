/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kubetest

import (
	rbacv1 "k8s.io/api/rbac/v1"

	redleasev1alpha1 "github.com/redlease/redlease/api/v1alpha1"
)

// LockUserRules are the rules of the Role a pod needs to take locks through
// pkg/kube or `lockctl --lock`: get, list and watch its DistributedLocks,
// and get the credentials Secrets their status.credentialsSecretRef names
// (written by the controller), never any other Secret. Without Secret names
// there is no Secret rule: an empty resourceNames would grant every Secret.
//
// It is the Go side of the one definition: the pkg/kube tests and
// lockctl's run as a ServiceAccount bound to exactly these rules (proving
// them enough), and test/helm checks that the chart's podRole renders them
// and that docs/library.md and the CronJob sample show them.
func LockUserRules(secretNames ...string) []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{{
		APIGroups: []string{redleasev1alpha1.GroupVersion.Group},
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
