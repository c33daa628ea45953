package controllers

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
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
