/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisacl_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/internal/redisacl"
	"github.com/redlease/redlease/internal/redistest"
)

// TestDetectOptions checks COMMAND INFO's answer against the server's
// version: sharded pub/sub and functions from 7.0, CLIENT SETINFO from 7.2; the fields
// the caller set are kept.
func TestDetectOptions(t *testing.T) {
	s := redistest.StartStandalone(t)
	ctx := testContext(t)
	info, err := s.Info(ctx, "server")
	if err != nil {
		t.Fatal(err)
	}
	major, minor := version(t, info["redis_version"])
	got, err := redisacl.DetectOptions(ctx, s.Client(t), protocol.ACLOptions{DB: 2, Cluster: true})
	if err != nil {
		t.Fatal(err)
	}
	want := protocol.ACLOptions{DB: 2, Cluster: true, ShardedPubSub: major >= 7, Functions: major >= 7, ClientSetInfo: major > 7 || major == 7 && minor >= 2}
	if got != want {
		t.Errorf("redis %s: DetectOptions = %+v, want %+v", info["redis_version"], got, want)
	}
}

func version(t *testing.T, v string) (major, minor int) {
	t.Helper()
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		t.Fatalf("redis_version %q", v)
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		t.Fatalf("redis_version %q", v)
	}
	return major, minor
}
