package controllers

import (
	"context"
	"crypto/x509"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/redisprobe"
)

// lockCredentials are what the controller connects with, from the Secrets
// the resource references in its own namespace and nothing else.
type lockCredentials struct {
	servers   redisprobe.Credentials
	sentinels redisprobe.Credentials
}

// loadCredentials reads the referenced Secrets into rd.creds. A missing
// Secret or key stops the round with SecretUnavailable.
func (r *DistributedLockReconciler) loadCredentials(ctx context.Context, rd *round) bool {
	spec := &rd.dl.Spec.Redis
	ns := rd.dl.Namespace
	var tlsCfg *redisprobe.TLS
	if t := spec.TLS; t != nil && t.Enabled {
		tlsCfg = &redisprobe.TLS{ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
		if t.CASecretRef != nil {
			ca, err := r.secretValue(ctx, ns, t.CASecretRef)
			if err != nil {
				rd.fail(v1alpha1.ReasonSecretUnavailable, fmt.Sprintf("CA bundle (spec.redis.tls.caSecretRef): %v", err))
				return false
			}
			if !x509.NewCertPool().AppendCertsFromPEM(ca) {
				rd.fail(v1alpha1.ReasonSecretUnavailable, fmt.Sprintf("CA bundle (spec.redis.tls.caSecretRef): Secret %s/%s key %q holds no PEM certificate", ns, t.CASecretRef.Name, t.CASecretRef.Key))
				return false
			}
			tlsCfg.CAPEM = ca
		}
	}
	rd.creds.servers = redisprobe.Credentials{Username: spec.Username, TLS: tlsCfg}
	rd.creds.sentinels = redisprobe.Credentials{TLS: tlsCfg}
	if spec.PasswordSecretRef != nil {
		pw, err := r.secretValue(ctx, ns, spec.PasswordSecretRef)
		if err != nil {
			rd.fail(v1alpha1.ReasonSecretUnavailable, fmt.Sprintf("password (spec.redis.passwordSecretRef): %v", err))
			return false
		}
		rd.creds.servers.Password = string(pw)
	}
	if s := spec.Sentinel; s != nil {
		rd.creds.sentinels.Username = s.Username
		if s.PasswordSecretRef != nil {
			pw, err := r.secretValue(ctx, ns, s.PasswordSecretRef)
			if err != nil {
				rd.fail(v1alpha1.ReasonSecretUnavailable, fmt.Sprintf("sentinel password (spec.redis.sentinel.passwordSecretRef): %v", err))
				return false
			}
			rd.creds.sentinels.Password = string(pw)
		}
	}
	return true
}

// secretCache keeps the data of the Secrets locks reference, keyed by
// resourceVersion. Only Secret metadata is in the manager's cache (a
// cluster's Secrets can be large and many); the data is read with the
// uncached reader when the metadata shows a new version.
type secretCache struct {
	mu      sync.Mutex
	secrets map[types.NamespacedName]cachedSecret
}

type cachedSecret struct {
	resourceVersion string
	data            map[string][]byte
}

func newSecretCache() *secretCache {
	return &secretCache{secrets: map[types.NamespacedName]cachedSecret{}}
}

// secretValue returns the value of ref in namespace ns. Its errors name the
// Secret and the key, never a value.
func (r *DistributedLockReconciler) secretValue(ctx context.Context, ns string, ref *v1alpha1.SecretKeyRef) ([]byte, error) {
	nn := types.NamespacedName{Namespace: ns, Name: ref.Name}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := r.kube.Get(ctx, nn, meta); err != nil {
		if apierrors.IsNotFound(err) {
			r.secrets.drop(nn)
			return nil, fmt.Errorf("the Secret %s does not exist", nn)
		}
		return nil, fmt.Errorf("reading Secret %s: %w", nn, err)
	}
	data, ok := r.secrets.lookup(nn, meta.ResourceVersion)
	if !ok {
		var s corev1.Secret
		if err := r.apiReader.Get(ctx, nn, &s); err != nil {
			if apierrors.IsNotFound(err) {
				r.secrets.drop(nn)
				return nil, fmt.Errorf("the Secret %s does not exist", nn)
			}
			return nil, fmt.Errorf("reading Secret %s: %w", nn, err)
		}
		logf.FromContext(ctx).V(1).Info("read Secret", "secret", nn.String(), "resourceVersion", s.ResourceVersion)
		data = s.Data
		r.secrets.store(nn, meta.ResourceVersion, data)
	}
	v, ok := data[ref.Key]
	if !ok {
		return nil, fmt.Errorf("the Secret %s has no key %q", nn, ref.Key)
	}
	return v, nil
}

func (c *secretCache) lookup(nn types.NamespacedName, rv string) (map[string][]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.secrets[nn]
	if !ok || s.resourceVersion != rv {
		return nil, false
	}
	return s.data, true
}

// store keeps data under the resourceVersion the metadata cache showed, so
// that the next lookup with the same metadata hits.
func (c *secretCache) store(nn types.NamespacedName, rv string, data map[string][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.secrets[nn] = cachedSecret{resourceVersion: rv, data: data}
}

func (c *secretCache) drop(nn types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.secrets, nn)
}
