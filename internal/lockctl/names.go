/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import "strings"

// splitNamespaced reads a namespaced object's name as commands take it,
// NAMESPACE/NAME or NAME: qualified says a namespace was given. ok is false
// for an empty part or a second "/"; what a missing namespace defaults to,
// and how a malformed name is reported, is the caller's to say.
func splitNamespaced(s string) (namespace, name string, qualified, ok bool) {
	namespace, name, qualified = strings.Cut(s, "/")
	if !qualified {
		namespace, name = "", s
	}
	ok = name != "" && !strings.Contains(name, "/") && (!qualified || namespace != "")
	return namespace, name, qualified, ok
}
