/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisprobe

// Fingerprint identifies credentials (user, password, TLS settings) by a
// hash, so that callers can key state by "who connects" without holding a
// secret in a map key or a log line. The controller keys replica-setting
// requests by it: requests merge only between requesters that reach a
// server with the same credentials.
func Fingerprint(c Credentials) string { return c.Fingerprint() }
