/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package e2e

import (
	"net"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/redistest"
)

// TestManagerSurvivesAHostileServer runs the manager binary with an inline
// lock in one namespace on a server that answers every command with a
// bulk string of 2^50 bytes. The lock is not Ready; the manager keeps
// running: another namespace's lock is Ready, and a lock created after
// several probe intervals of the hostile one becomes Ready too. Before the
// reply limit the manager died on its first probe of that server
// (go-redis's make([]byte, n+2) panicked in a goroutine of its own), and
// crash-looped for as long as the lock existed.
func TestManagerSurvivesAHostileServer(t *testing.T) {
	env := kubetest.Start(t)
	const ns = "redlease-system"
	createNamespace(t, env.Client, ns, nil)
	mgr := startManager(t, env.KubeconfigFile(t), ns)

	hostile := hostileServer(t, "$1125899906842624\r\n")
	srv := redistest.StartStandalone(t)
	attacker, victim := env.Namespace(t), env.Namespace(t)
	create := func(ns, name, addr string) {
		t.Helper()
		dl := &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.DistributedLockSpec{Redis: v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{addr}}}}
		if err := env.Client.Create(t.Context(), dl); err != nil {
			t.Fatal(err)
		}
	}
	create(attacker, "hostile", hostile)
	create(victim, "settlement", srv.Addr())
	waitReady(t, env.Client, victim, []string{"settlement"})
	deadline := time.Now().Add(90 * time.Second)
	for {
		var dl v1alpha1.DistributedLock
		err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: attacker, Name: "hostile"}, &dl)
		c := apimeta.FindStatusCondition(dl.Status.Conditions, v1alpha1.ConditionReady)
		if err == nil && c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonEndpointUnreachable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hostile lock: %v, conditions %+v", err, dl.Status.Conditions)
		}
		time.Sleep(250 * time.Millisecond)
	}
	time.Sleep(3 * 2 * time.Second) // three probe intervals of the hostile lock
	create(victim, "later", srv.Addr())
	waitReady(t, env.Client, victim, []string{"settlement", "later"})
	if log := mgr.log.String(); strings.Contains(log, "panic:") || strings.Contains(log, "fatal error:") {
		t.Errorf("the manager crashed:\n%s", log)
	}
}

// hostileServer answers each read of every connection with reply.
func hostileServer(t *testing.T, reply string) string {
	t.Helper()
	return redistest.ServeFake(t, nil, func(c net.Conn) {
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
			if _, err := c.Write([]byte(reply)); err != nil {
				return
			}
		}
	})
}
