/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/protocol"
)

// libraryPattern matches the library of every protocol version
// (FUNCTION LIST LIBRARYNAME takes a glob): status shows the old one
// beside the new during a rolling upgrade.
const libraryPattern = "redlease_v*"

// maxLibraries and maxLibraryName are status.endpoints[].libraries' schema
// bounds.
const maxLibraries, maxLibraryName = 8, 64

// loadLibrary makes every master of a store serve the protocol's function
// library: FUNCTION LIST on each master the round found, FUNCTION LOAD
// where the library is missing (a restart without persistence wipes it, a
// failover may promote a server that never had it, a new protocol version
// brings a new one). Replicas get it from their master. The result is
// FunctionsLoaded; rd.functionsRefused records a master that has no
// functions or refuses FUNCTION to the controller, where tenants must keep
// scripts. An Event names the masters it loaded.
func (s *StoreReconciler) loadLibrary(ctx context.Context, rd *round, so storeObject) {
	if len(rd.masters) == 0 {
		reason := firstNonEmpty(rd.failReason, firstNonEmpty(rd.masterReason, v1alpha1.ReasonEndpointUnreachable))
		rd.functions = result(metav1.ConditionUnknown, reason, "no master answered: the "+protocol.LibraryName+" library was not checked")
		return
	}
	var loaded, refused, failed []string
	for _, m := range rd.masters {
		libs, err := listLibraries(ctx, m.client)
		if err == nil && !slices.Contains(libs, protocol.LibraryName) {
			if err = protocol.LoadLibrary(ctx, m.client); err == nil {
				libs = append(libs, protocol.LibraryName)
				slices.Sort(libs)
				loaded = append(loaded, m.addr)
			}
		}
		switch {
		case err == nil:
			m.libraries = libs
		case functionsRefused(err):
			refused = append(refused, fmt.Sprintf("%s (%s)", m.addr, errorText(err)))
		default:
			failed = append(failed, fmt.Sprintf("%s (%s)", m.addr, errorText(err)))
		}
	}
	rd.functionsRefused = len(refused) > 0
	if len(loaded) > 0 {
		s.recorder.Eventf(so.obj, nil, corev1.EventTypeNormal, v1alpha1.ReasonLibraryLoaded, "LoadLibrary",
			"loaded the %s function library on %s, where it was missing (a restart without persistence, a failover, or a new server)", protocol.LibraryName, listAddrs(loaded))
	}
	functionsOnly := so.tenants.ScriptsOrDefault() == v1alpha1.TenantScriptsFunctionsOnly && so.spec.isolation == v1alpha1.IsolationACL
	var problems []string
	if len(refused) > 0 {
		msg := fmt.Sprintf("no functions on %s (a server older than Redis 7.0, or FUNCTION refused to controllerAuth): pods run the scripts with EVALSHA there", strings.Join(refused, ", "))
		if functionsOnly {
			msg += "; tenants.scripts FunctionsOnly is not in force: the tenants keep EVAL and EVALSHA until every master serves the library (upgrade the server, or grant controllerAuth +function|list +function|load)"
		}
		problems = append(problems, msg)
	}
	if len(failed) > 0 {
		msg := fmt.Sprintf("loading the library failed on %s; the next probe tries again", strings.Join(failed, ", "))
		if functionsOnly {
			msg += " (FunctionsOnly tenants wait for it)"
		}
		problems = append(problems, msg)
	}
	if len(problems) > 0 {
		rd.functions = result(metav1.ConditionFalse, v1alpha1.ReasonFunctionsUnavailable, strings.Join(problems, "; "))
		return
	}
	msg := fmt.Sprintf("%d master(s) serve the %s library", len(rd.masters), protocol.LibraryName)
	if len(loaded) > 0 {
		msg += fmt.Sprintf(" (loaded on %s this probe)", listAddrs(loaded))
	}
	rd.functions = result(metav1.ConditionTrue, v1alpha1.ReasonLibraryLoaded, msg)
}

// listLibraries are the redlease libraries c's server serves, sorted.
func listLibraries(ctx context.Context, c *redis.Client) ([]string, error) {
	reply, err := c.Do(ctx, "function", "list", "libraryname", libraryPattern).Slice()
	if err != nil {
		return nil, fmt.Errorf("FUNCTION LIST: %w", err)
	}
	var libs []string
	for _, lib := range reply {
		// What status can hold (endpoints[].libraries): a server may
		// answer anything.
		if name := libraryName(lib); strings.HasPrefix(name, "redlease_v") && len(name) <= maxLibraryName && !slices.Contains(libs, name) && len(libs) < maxLibraries {
			libs = append(libs, name)
		}
	}
	slices.Sort(libs)
	return libs, nil
}

// libraryName is the library_name field of one FUNCTION LIST entry: a map
// under RESP3, a flat list of fields and values under RESP2.
func libraryName(entry any) string {
	switch e := entry.(type) {
	case map[any]any:
		s, _ := e["library_name"].(string)
		return s
	case []any:
		for i := 0; i+1 < len(e); i += 2 {
			if k, _ := e[i].(string); k == "library_name" {
				s, _ := e[i+1].(string)
				return s
			}
		}
	}
	return ""
}

// functionsRefused reports an error that says the server will not serve
// functions to the controller: FUNCTION unknown (older than Redis 7.0, or
// renamed away by a managed service) or denied by its ACL.
func functionsRefused(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "noperm") || strings.Contains(msg, "unknown command") || strings.Contains(msg, "unknown subcommand")
}
