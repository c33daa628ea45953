/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import "testing"

func TestSplitNamespaced(t *testing.T) {
	for _, tc := range []struct {
		in                  string
		namespace, name     string
		qualified, accepted bool
	}{
		{in: "nightly", name: "nightly", accepted: true},
		{in: "billing/nightly", namespace: "billing", name: "nightly", qualified: true, accepted: true},
		{in: ""},
		{in: "billing/", namespace: "billing", qualified: true},
		{in: "/nightly", name: "nightly", qualified: true},
		{in: "a/b/c", namespace: "a", name: "b/c", qualified: true},
	} {
		ns, name, qualified, ok := splitNamespaced(tc.in)
		if ok != tc.accepted || (ok && (ns != tc.namespace || name != tc.name || qualified != tc.qualified)) {
			t.Errorf("splitNamespaced(%q) = %q, %q, %v, %v; want %q, %q, %v, %v", tc.in, ns, name, qualified, ok, tc.namespace, tc.name, tc.qualified, tc.accepted)
		}
	}
}
