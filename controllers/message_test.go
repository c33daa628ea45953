package controllers

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/redlease/redlease/api/v1alpha1"
)

func TestJoinBounded(t *testing.T) {
	items := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("10.0.0.%d:6379: connection refused", i))
		}
		return out
	}
	for _, tt := range []struct {
		name   string
		items  []string
		budget int
		want   string
	}{
		{"empty", nil, 100, ""},
		{"fits", []string{"a", "b"}, 100, "a; b"},
		{"cut", []string{"aaaa", "bbbb", "cccc"}, 22, "aaaa; …and 2 more"},
		{"first item always shown", []string{strings.Repeat("x", 30), "y"}, 10, strings.Repeat("x", 30) + "; …and 1 more"},
	} {
		if got := joinBounded(tt.items, "; ", tt.budget); got != tt.want {
			t.Errorf("%s: joinBounded = %q, want %q", tt.name, got, tt.want)
		}
	}
	got := joinList(items(64))
	if len(got) > maxMessage || !strings.HasSuffix(got, "more") {
		t.Errorf("joinList of 64 endpoints is %d bytes (%q…), want at most %d ending in 'and N more'", len(got), got[:40], maxMessage)
	}
}

func TestCapMessage(t *testing.T) {
	long := strings.Repeat("é", maxMessage) // 2 bytes a rune
	got := capMessage(long)
	if len(got) > maxMessage || !utf8.ValidString(got) || !strings.HasSuffix(got, "… (cut)") {
		t.Errorf("capMessage: %d bytes, valid UTF-8 %v, suffix %q", len(got), utf8.ValidString(got), got[len(got)-10:])
	}
	if short := "fine"; capMessage(short) != short {
		t.Errorf("capMessage changed a short message")
	}
}

func TestBoundedRecorderCapsNotes(t *testing.T) {
	fake := events.NewFakeRecorder(1)
	boundedRecorder{fake}.Eventf(nil, nil, corev1.EventTypeWarning, "R", "A", "%s", strings.Repeat("n", 5000))
	ev := <-fake.Events
	if len(ev) > maxMessage+len("Warning R ") {
		t.Errorf("event note is %d bytes, want at most %d", len(ev), maxMessage)
	}
}

// A lock naming 64 servers that all fail: before, the condition message
// listed every one (about 4 KiB here; tens of KiB with long host names and
// errors), and past the API's 32 KiB limit the status patch was refused,
// freezing status.
// Now status is written, Ready is False, and every message and Event note
// stays under 1 KiB, naming how many endpoints it left out.
func TestSixtyFourUnreachableEndpointsKeepStatusBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	var addrs []string
	for port := 1; port <= 64; port++ { // nothing listens on these loopback ports
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", port))
	}
	h.create("many", v1alpha1.DistributedLockSpec{Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeReplicated, Addresses: addrs}})
	dl := h.waitFor("many", "Ready False with every endpoint failing", func(dl *v1alpha1.DistributedLock) error {
		return hasCondition(dl, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonEndpointUnreachable)
	})
	for _, c := range dl.Status.Conditions {
		if len(c.Message) > maxMessage {
			t.Errorf("condition %s message is %d bytes, want at most %d", c.Type, len(c.Message), maxMessage)
		}
	}
	if ready := condition(dl, v1alpha1.ConditionReady); !strings.Contains(ready.Message, "more") {
		t.Errorf("Ready message does not say how many endpoints it left out: %q", ready.Message)
	}
	ev := h.waitEvent("many", corev1.EventTypeWarning, v1alpha1.ReasonEndpointUnreachable)
	if len(ev.Note) > maxMessage {
		t.Errorf("Event note is %d bytes, want at most %d", len(ev.Note), maxMessage)
	}
}
