/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/podrbac"
)

// publishInline writes what the pods of an inline lock need: the
// credentials Secret (a copy of the pods' credentials from the Secrets the
// spec names) and the connection.
func (r *DistributedLockReconciler) publishInline(ctx context.Context, rd *round) {
	if rd.failReason == v1alpha1.ReasonSecretUnavailable {
		return
	}
	data, err := r.podCredentials(ctx, rd.store, rd.store.clientAuth)
	if err != nil {
		rd.fail(v1alpha1.ReasonSecretUnavailable, err.Error())
		return
	}
	name := podrbac.LockSecretName(rd.dl)
	if err := r.writeCredentials(ctx, rd.store, rd.dl.Namespace, name, data, nil); err != nil {
		rd.fail(credentialsFailureReason(err), err.Error())
		return
	}
	if err := r.deleteOtherInlineSecrets(ctx, rd.store, name); err != nil {
		rd.fail(v1alpha1.ReasonCredentialsNotProvisioned, err.Error())
		return
	}
	rd.credentialsSecret = name
	var masters []string
	for _, m := range rd.masters {
		masters = append(masters, m.addr)
	}
	rd.connection = connectionOf(rd.store, rd.masterAddr, masters)
}

// connectionOf is status.connection: where pods connect for the store's
// mode. master is the store's master (Standalone, Replicated), masters the
// Cluster masters (seeds when the spec names a Service).
func connectionOf(st *storeSpec, master string, masters []string) *v1alpha1.ConnectionStatus {
	spec := st.redis
	c := &v1alpha1.ConnectionStatus{Mode: spec.Mode, DB: spec.DB}
	switch spec.Mode {
	case v1alpha1.RedisModeSentinel:
		if s := spec.Sentinel; s != nil {
			c.Sentinel = &v1alpha1.SentinelConnection{MasterName: s.MasterName, Addresses: slices.Clone(s.Addresses)}
		}
	case v1alpha1.RedisModeCluster:
		c.Addresses = slices.Clone(spec.Addresses)
		if len(c.Addresses) == 0 {
			c.Addresses = slices.Clone(masters)
		}
	case v1alpha1.RedisModeRedlock:
		c.Addresses = slices.Clone(spec.Addresses)
	default:
		if master != "" {
			c.Addresses = []string{master}
		}
	}
	if t := spec.TLS; t != nil && t.Enabled {
		c.TLS = &v1alpha1.ConnectionTLS{ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	}
	return c
}

// storeMasters are the Cluster masters a store's status lists.
func storeMasters(st *v1alpha1.LockStoreStatus) []string {
	var out []string
	for _, e := range st.Endpoints {
		if e.Role == v1alpha1.EndpointRoleMaster {
			out = append(out, e.Address)
		}
	}
	return out
}

// secretConflictError: a Secret of the name a lock's pods read exists and
// was not written by the controller for the lock's store (or inline lock):
// someone else's Secret, or another store's. It is never overwritten.
type secretConflictError struct {
	secret types.NamespacedName
	owner  string
}

func (e *secretConflictError) Error() string {
	return fmt.Sprintf("the Secret %s exists and was not written by redlease for %s: it is left as it is; delete it, or name another Secret in spec.credentialsSecretName", e.secret, e.owner)
}

// credentialsFailureReason is the Ready reason of a credentials Secret that
// could not be written: CredentialsSecretConflict for a Secret that is not
// the controller's, else CredentialsNotProvisioned.
func credentialsFailureReason(err error) string {
	if _, ok := errors.AsType[*secretConflictError](err); ok {
		return v1alpha1.ReasonCredentialsSecretConflict
	}
	return v1alpha1.ReasonCredentialsNotProvisioned
}

// deleteOtherInlineSecrets deletes the credentials Secrets an inline lock
// wrote under another name than keep (spec.credentialsSecretName changed):
// nothing else reads them, a lock's Secret being its own.
func (r *DistributedLockReconciler) deleteOtherInlineSecrets(ctx context.Context, st *storeSpec, keep string) error {
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := r.kube.List(ctx, &list, client.InNamespace(st.namespace), client.MatchingLabels{v1alpha1.LabelStoreUID: string(st.uid)}); err != nil {
		return fmt.Errorf("listing the credentials Secrets of %s: %w", st.requester(), err)
	}
	for i := range list.Items {
		m := &list.Items[i]
		if m.Name == keep {
			continue
		}
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name}}
		if err := r.kube.Delete(ctx, sec); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the credentials Secret %s/%s the lock no longer names: %w", m.Namespace, m.Name, err)
		}
		logf.FromContext(ctx).Info("credentials Secret deleted: the lock names another", "secret", m.Namespace+"/"+m.Name)
	}
	return nil
}

// podCredentials is the credentials Secret's data for auth: its user and
// password, the CA bundle, the sentinels' credentials and the client
// certificate, read from the Secrets the store names.
func (r *DistributedLockReconciler) podCredentials(ctx context.Context, st *storeSpec, auth v1alpha1.RedisAuth) (map[string][]byte, error) {
	data, err := r.sharedCredentials(ctx, st)
	if err != nil {
		return nil, err
	}
	if auth.Username != "" {
		data[v1alpha1.CredentialsUsername] = []byte(auth.Username)
	}
	if ref := auth.PasswordSecretRef; ref != nil {
		pw, err := r.secretValue(ctx, st.refNamespace(ref.Namespace), ref)
		if err != nil {
			return nil, fmt.Errorf("the pods' password: %w", err)
		}
		data[v1alpha1.CredentialsPassword] = pw
	}
	return data, nil
}

// sharedCredentials is what every tenant of a store gets alike: the CA
// bundle, the client certificate and the sentinels' credentials.
func (r *DistributedLockReconciler) sharedCredentials(ctx context.Context, st *storeSpec) (map[string][]byte, error) {
	data := map[string][]byte{}
	if t := st.redis.TLS; t != nil && t.Enabled {
		if ref := t.CASecretRef; ref != nil {
			ca, err := r.secretValue(ctx, st.refNamespace(ref.Namespace), ref)
			if err != nil {
				return nil, fmt.Errorf("CA bundle (spec.redis.tls.caSecretRef): %w", err)
			}
			data[v1alpha1.CredentialsCA] = ca
		}
		if ref := t.ClientCertSecretRef; ref != nil {
			ns := st.refNamespace(ref.Namespace)
			for _, k := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
				v, err := r.secretValue(ctx, ns, &v1alpha1.SecretKeyRef{Name: ref.Name, Key: k})
				if err != nil {
					return nil, fmt.Errorf("client certificate (spec.redis.tls.clientCertSecretRef): %w", err)
				}
				data[k] = v
			}
		}
	}
	if s := st.redis.Sentinel; s != nil {
		if s.Username != "" {
			data[v1alpha1.CredentialsSentinelUsername] = []byte(s.Username)
		}
		if ref := s.PasswordSecretRef; ref != nil {
			pw, err := r.secretValue(ctx, st.refNamespace(ref.Namespace), ref)
			if err != nil {
				return nil, fmt.Errorf("sentinel password (spec.redis.sentinel.passwordSecretRef): %w", err)
			}
			data[v1alpha1.CredentialsSentinelPassword] = pw
		}
	}
	return data, nil
}

// writeCredentials creates or updates Secret ns/name with data (and the
// controller's annotations), owned by the store so that deleting the store
// deletes it. Annotations the controller does not manage (the rotate
// request) are kept. It writes only when something changed.
func (r *DistributedLockReconciler) writeCredentials(ctx context.Context, st *storeSpec, ns, name string, data map[string][]byte, annotations map[string]string) error {
	nn := types.NamespacedName{Namespace: ns, Name: name}
	var cur corev1.Secret
	err := r.apiReader.Get(ctx, nn, &cur)
	switch {
	case apierrors.IsNotFound(err):
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{v1alpha1.LabelStoreUID: string(st.uid)}, Annotations: annotations},
			Type:       corev1.SecretTypeOpaque,
			Data:       data,
		}
		s.OwnerReferences = []metav1.OwnerReference{ownerRef(st)}
		if err := r.kube.Create(ctx, s); err != nil {
			return fmt.Errorf("creating the credentials Secret %s: %w", nn, err)
		}
		logf.FromContext(ctx).Info("credentials Secret created", "secret", nn.String())
		return nil
	case err != nil:
		return fmt.Errorf("reading the credentials Secret %s: %w", nn, err)
	}
	if cur.Labels[v1alpha1.LabelStoreUID] != string(st.uid) {
		return &secretConflictError{secret: nn, owner: st.requester()}
	}
	want := cur.DeepCopy()
	want.Data = data
	if want.Annotations == nil && len(annotations) > 0 {
		want.Annotations = map[string]string{}
	}
	maps.Copy(want.Annotations, annotations)
	if maps.EqualFunc(cur.Data, want.Data, func(a, b []byte) bool { return string(a) == string(b) }) && maps.Equal(cur.Annotations, want.Annotations) {
		return nil
	}
	if err := r.kube.Update(ctx, want); err != nil {
		return fmt.Errorf("updating the credentials Secret %s: %w", nn, err)
	}
	logf.FromContext(ctx).Info("credentials Secret updated", "secret", nn.String())
	return nil
}

// ownerRef makes the store (or inline lock) the owner of what it writes.
func ownerRef(st *storeSpec) metav1.OwnerReference {
	gvk := v1alpha1.GroupVersion.WithKind(st.kind)
	return metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: st.name, UID: st.uid}
}
