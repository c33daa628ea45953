package controllers

import (
	"context"
	"crypto/tls"
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

// lockCredentials are what the controller connects with: the store's
// controller credentials, from Secrets in the store's namespace (or, for a
// ClusterLockStore, the namespaces its references name) and nothing else.
type lockCredentials struct {
	servers   redisprobe.Credentials
	sentinels redisprobe.Credentials
}

// loadCredentials reads the store's controller credentials and TLS into
// rd.creds. A missing Secret or key stops the round with SecretUnavailable.
func (r *DistributedLockReconciler) loadCredentials(ctx context.Context, rd *round) bool {
	st := rd.store
	tlsCfg, err := r.storeTLS(ctx, st)
	if err != nil {
		rd.fail(v1alpha1.ReasonSecretUnavailable, err.Error())
		return false
	}
	rd.creds.servers = redisprobe.Credentials{Username: st.controllerAuth.Username, TLS: tlsCfg}
	rd.creds.sentinels = redisprobe.Credentials{TLS: tlsCfg}
	if ref := st.controllerAuth.PasswordSecretRef; ref != nil {
		pw, err := r.secretValue(ctx, st.refNamespace(ref.Namespace), ref)
		if err != nil {
			rd.fail(v1alpha1.ReasonSecretUnavailable, fmt.Sprintf("controller password (%s): %v", controllerAuthField(st), err))
			return false
		}
		rd.creds.servers.Password = string(pw)
	}
	if s := st.redis.Sentinel; s != nil {
		rd.creds.sentinels.Username = s.Username
		if s.PasswordSecretRef != nil {
			pw, err := r.secretValue(ctx, st.refNamespace(s.PasswordSecretRef.Namespace), s.PasswordSecretRef)
			if err != nil {
				rd.fail(v1alpha1.ReasonSecretUnavailable, fmt.Sprintf("sentinel password (spec.redis.sentinel.passwordSecretRef): %v", err))
				return false
			}
			rd.creds.sentinels.Password = string(pw)
		}
	}
	return true
}

// controllerAuthField names the field the controller's password comes from.
func controllerAuthField(st *storeSpec) string {
	if st.kind == kindInline && st.owner.(*v1alpha1.DistributedLock).Spec.ControllerAuth == nil {
		return "spec.redis.passwordSecretRef"
	}
	return "spec.controllerAuth.passwordSecretRef"
}

// storeTLS reads the store's TLS settings: the CA bundle and the client
// certificate from their Secrets. nil when TLS is off.
func (r *DistributedLockReconciler) storeTLS(ctx context.Context, st *storeSpec) (*redisprobe.TLS, error) {
	t := st.redis.TLS
	if t == nil || !t.Enabled {
		return nil, nil
	}
	cfg := &redisprobe.TLS{ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	if ref := t.CASecretRef; ref != nil {
		ns := st.refNamespace(ref.Namespace)
		ca, err := r.secretValue(ctx, ns, ref)
		if err != nil {
			return nil, fmt.Errorf("CA bundle (spec.redis.tls.caSecretRef): %w", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("CA bundle (spec.redis.tls.caSecretRef): Secret %s/%s key %q holds no PEM certificate", ns, ref.Name, ref.Key)
		}
		cfg.CAPEM = ca
	}
	if ref := t.ClientCertSecretRef; ref != nil {
		cert, err := r.clientCert(ctx, st.refNamespace(ref.Namespace), ref.Name)
		if err != nil {
			return nil, fmt.Errorf("client certificate (spec.redis.tls.clientCertSecretRef): %w", err)
		}
		cfg.ClientCert = cert
	}
	return cfg, nil
}

// clientCert reads a kubernetes.io/tls Secret's certificate and key.
func (r *DistributedLockReconciler) clientCert(ctx context.Context, ns, name string) (*tls.Certificate, error) {
	crt, err := r.secretValue(ctx, ns, &v1alpha1.SecretKeyRef{Name: name, Key: corev1.TLSCertKey})
	if err != nil {
		return nil, err
	}
	key, err := r.secretValue(ctx, ns, &v1alpha1.SecretKeyRef{Name: name, Key: corev1.TLSPrivateKeyKey})
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(crt, key)
	if err != nil {
		return nil, fmt.Errorf("the Secret %s/%s holds no usable certificate and key (tls.crt, tls.key)", ns, name)
	}
	return &cert, nil
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
	data, err := r.secretData(ctx, nn)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("the Secret %s does not exist", nn)
		}
		return nil, err
	}
	v, ok := data[ref.Key]
	if !ok {
		return nil, fmt.Errorf("the Secret %s has no key %q", nn, ref.Key)
	}
	return v, nil
}

// secretData returns the data of Secret nn, read with the uncached reader
// only when the cached metadata shows a version not read yet. A missing
// Secret is a NotFound error.
func (r *DistributedLockReconciler) secretData(ctx context.Context, nn types.NamespacedName) (map[string][]byte, error) {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := r.kube.Get(ctx, nn, meta); err != nil {
		if apierrors.IsNotFound(err) {
			r.secrets.drop(nn)
			return nil, err
		}
		return nil, fmt.Errorf("reading Secret %s: %w", nn, err)
	}
	if data, ok := r.secrets.lookup(nn, meta.ResourceVersion); ok {
		return data, nil
	}
	var s corev1.Secret
	if err := r.apiReader.Get(ctx, nn, &s); err != nil {
		if apierrors.IsNotFound(err) {
			r.secrets.drop(nn)
			return nil, err
		}
		return nil, fmt.Errorf("reading Secret %s: %w", nn, err)
	}
	logf.FromContext(ctx).V(1).Info("read Secret", "secret", nn.String(), "resourceVersion", s.ResourceVersion)
	r.secrets.store(nn, meta.ResourceVersion, s.Data)
	return s.Data, nil
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
