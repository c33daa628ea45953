package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redistest"
)

// A TLS-only server: Ready with the CA from a Secret and the certificate's
// server name; without trusting the CA the endpoint is unreachable.
func TestTLS(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{probeInterval: time.Second})
	srv := redistest.StartStandalone(t, redistest.WithTLS())
	h.createSecret("redis-ca", map[string]string{"ca.crt": string(srv.CACertPEM())})
	other := redistest.StartStandalone(t, redistest.WithTLS()) // a CA that does not sign srv
	h.createSecret("wrong-ca", map[string]string{"ca.crt": string(other.CACertPEM())})

	withCA := func(secret string) v1alpha1.DistributedLockSpec {
		s := standaloneSpec(srv.Addr())
		s.Redis.TLS = &v1alpha1.TLSSpec{Enabled: true, ServerName: redistest.TLSServerName,
			CASecretRef: &v1alpha1.SecretKeyRef{Name: secret, Key: "ca.crt"}}
		return s
	}
	h.create("trusted", withCA("redis-ca"))
	h.create("untrusted", withCA("wrong-ca"))
	h.waitFor("trusted", "Ready over TLS", isReady)
	h.waitFor("untrusted", "not Ready with a CA that did not sign the server", func(dl *v1alpha1.DistributedLock) error {
		return hasCondition(dl, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonEndpointUnreachable)
	})
}
