package controllers

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redisprobe"
	"github.com/redlease/redlease/internal/redistest"
)

// TestPreflight: maxmemory-policy allkeys-lru makes Preflight False with
// EvictionPolicyUnsafe (a Warning Event) without taking Ready away; a
// server without persistence passes with PersistenceDisabled and says so.
func TestPreflight(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	lru := redistest.StartStandalone(t, redistest.WithConfig("--maxmemory-policy", "allkeys-lru"))
	plain := redistest.StartStandalone(t)
	h.create("lru", standaloneSpec(lru.Addr()))
	h.create("plain", standaloneSpec(plain.Addr()))

	dl := h.waitFor("lru", "Preflight False", func(dl *v1alpha1.DistributedLock) error {
		if err := hasCondition(dl, v1alpha1.ConditionPreflight, metav1.ConditionFalse, v1alpha1.ReasonEvictionPolicyUnsafe); err != nil {
			return err
		}
		return isReady(dl)
	})
	msg := condition(dl, v1alpha1.ConditionPreflight).Message
	if !strings.Contains(msg, "allkeys-lru") || !strings.Contains(msg, "persistence is off") {
		t.Errorf("Preflight message %q should name the policy and the missing persistence", msg)
	}
	h.waitEvent("lru", corev1.EventTypeWarning, v1alpha1.ReasonEvictionPolicyUnsafe)

	dl = h.waitFor("plain", "Preflight True", func(dl *v1alpha1.DistributedLock) error {
		return hasCondition(dl, v1alpha1.ConditionPreflight, metav1.ConditionTrue, v1alpha1.ReasonPersistenceDisabled)
	})
	if msg := condition(dl, v1alpha1.ConditionPreflight).Message; !strings.Contains(msg, "clock") {
		t.Errorf("Preflight message %q should say fences rely on the clock floor", msg)
	}
}

// TestPreflightVerdict: what preflight concludes from what it could read
// on each server (no server needed: the round's INFO and CONFIG are
// given). A setting it could not read is Unknown ConfigUnavailable, never
// PreflightPassed, unless an unsafe policy makes it False anyway.
func TestPreflightVerdict(t *testing.T) {
	refused := fmt.Errorf("%w: CONFIG GET: ERR unknown command 'config'", redisprobe.ErrConfigUnavailable)
	server := func(policy string, aof bool, save string, configErr error) *endpoint {
		return &endpoint{
			addr: "10.0.0.1:6379", probed: true,
			info:       redisprobe.ServerInfo{MaxMemoryPolicy: policy, AOFEnabled: aof},
			configRead: true, config: redisprobe.ServerConfig{Save: save}, configErr: configErr,
		}
	}
	tests := []struct {
		name   string
		server *endpoint
		status metav1.ConditionStatus
		reason string
		says   string
	}{
		{"safe, RDB on", server("noeviction", false, "3600 1", nil), metav1.ConditionTrue, v1alpha1.ReasonPreflightPassed, "persistence is on"},
		{"safe, AOF on, CONFIG refused", server("noeviction", true, "", refused), metav1.ConditionTrue, v1alpha1.ReasonPreflightPassed, "persistence is on"},
		{"safe, no persistence", server("noeviction", false, "", nil), metav1.ConditionTrue, v1alpha1.ReasonPersistenceDisabled, "persistence is off"},
		{"safe, CONFIG refused", server("noeviction", false, "", refused), metav1.ConditionUnknown, v1alpha1.ReasonConfigUnavailable, "persistence cannot be read"},
		{"policy not in INFO", server("", true, "", nil), metav1.ConditionUnknown, v1alpha1.ReasonConfigUnavailable, "eviction policy cannot be read"},
		{"unsafe, CONFIG refused", server("allkeys-lru", false, "", refused), metav1.ConditionFalse, v1alpha1.ReasonEvictionPolicyUnsafe, "persistence cannot be read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd := &round{endpoints: []*endpoint{tt.server}}
			(&DistributedLockReconciler{}).preflight(t.Context(), rd)
			got := rd.preflight
			if got.status != tt.status || got.reason != tt.reason || !strings.Contains(got.message, tt.says) {
				t.Errorf("Preflight %s/%s (%s), want %s/%s saying %q", got.status, got.reason, got.message, tt.status, tt.reason, tt.says)
			}
		})
	}
}
