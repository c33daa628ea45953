/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redistest"
)

// TestHostileReplyKeepsTheManager: a lock on a server that answers every
// command with a bulk string of 2^50 bytes is not Ready (the endpoint's
// lastError says the reply is too large), and a lock on a real server in
// the same manager stays Ready. Before the reply limit, go-redis's
// make([]byte, n+2) panicked in probeAll's goroutine and the test binary
// died.
func TestHostileReplyKeepsTheManager(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	hostile := startHostileRedis(t, "hostile", func([]string) (string, bool) { return "$1125899906842624\r\n", true })
	srv := redistest.StartStandalone(t)
	h.create("hostile", standaloneSpec(hostile.Addr()))
	h.create("good", standaloneSpec(srv.Addr()))
	h.waitFor("hostile", "Ready=False with the reply refused", func(dl *v1alpha1.DistributedLock) error {
		if err := hasCondition(dl, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonEndpointUnreachable); err != nil {
			return err
		}
		if len(dl.Status.Endpoints) != 1 || !strings.Contains(dl.Status.Endpoints[0].LastError, "reply is larger") {
			return fmt.Errorf("endpoints %+v, want the reply refused", dl.Status.Endpoints)
		}
		return nil
	})
	h.waitFor("good", "Ready", isReady)
}
