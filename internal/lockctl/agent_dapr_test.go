/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redlease/redlease/internal/locktest"
	"github.com/redlease/redlease/internal/redistest"
)

// daprCall posts body to Dapr's route path on the agent and decodes the
// reply into a map.
func (a *agentProcess) daprCall(t *testing.T, path, body string) (int, map[string]any) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", a.socket)
	}}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://agent"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return res.StatusCode, out
}

// daprStep is one call of Dapr's lock API and the answer Dapr gives.
type daprStep struct {
	path, body string
	status     int
	field      string
	want       any
}

// With --dapr-store, the agent answers Dapr's lock API as Dapr does: a
// try-lock per owner, unlock statuses 0 (unlocked), 1 (no such lock), 2
// (another owner's), the store name checked — plus the fence.
func TestAgentSpeaksDaprsLockAPI(t *testing.T) {
	srv := redistest.StartStandalone(t)
	a := startAgent(t, "--redis", redisURL(srv), "--dapr-store", "lockstore")
	lock, unlock := "/v1.0-alpha1/lock/lockstore", "/v1.0-alpha1/unlock/lockstore"
	for i, s := range []daprStep{
		{lock, `{"resourceId":"report","lockOwner":"a","expiryInSeconds":60}`, 200, "success", true},
		{lock, `{"resourceId":"report","lockOwner":"b","expiryInSeconds":60}`, 200, "success", false},
		{lock, `{"resourceId":"report","lockOwner":"a","expiryInSeconds":60}`, 200, "success", false},
		{unlock, `{"resourceId":"report","lockOwner":"b"}`, 200, "status", 2.0},
		{unlock, `{"resourceId":"report","lockOwner":"a"}`, 200, "status", 0.0},
		{unlock, `{"resourceId":"report","lockOwner":"a"}`, 200, "status", 1.0},
		{lock, `{"resourceId":"report","lockOwner":"b","expiryInSeconds":60}`, 200, "success", true},
		{"/v1.0-alpha1/lock/other", `{"resourceId":"report","lockOwner":"a","expiryInSeconds":60}`, 400, "errorCode", "ERR_LOCK_STORE_NOT_FOUND"},
		{lock, `{"resourceId":"report","lockOwner":"a","expiryInSeconds":0}`, 400, "errorCode", "ERR_MALFORMED_REQUEST"},
		{lock, `{"resourceId":"","lockOwner":"a","expiryInSeconds":5}`, 400, "errorCode", "ERR_MALFORMED_REQUEST"},
	} {
		status, out := a.daprCall(t, s.path, s.body)
		if status != s.status || out[s.field] != s.want {
			t.Fatalf("step %d, %s %s: %d %v; want %d with %s %v", i, s.path, s.body, status, out, s.status, s.field, s.want)
		}
		if s.field == "success" && s.want == true && out["fence"] == nil {
			t.Fatalf("step %d: a granted lock without its fence: %v", i, out)
		}
	}
}

// Dapr's expiryInSeconds bounds the hold: the agent releases the lease
// then (the watchdog renewed it meanwhile), not before.
func TestAgentReleasesADaprLockAtItsExpiry(t *testing.T) {
	srv := redistest.StartStandalone(t)
	a := startAgent(t, "--redis", redisURL(srv), "--ttl", "30s", "--dapr-store", "lockstore")
	if _, out := a.daprCall(t, "/v1.0-alpha1/lock/lockstore", `{"resourceId":"k","lockOwner":"a","expiryInSeconds":1}`); out["success"] != true {
		t.Fatalf("lock: %v", out)
	}
	taken := time.Now()
	rdb := srv.Client(t)
	time.Sleep(time.Until(taken.Add(700 * time.Millisecond)))
	if rdb.Exists(t.Context(), "k").Val() != 1 {
		t.Fatal("released before expiryInSeconds")
	}
	locktest.WaitFor(t, 5*time.Second, "the release at expiry", func() bool { return rdb.Exists(t.Context(), "k").Val() == 0 })
}
