package demo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/redistest"
)

// The demo's stack: control plane, Redis, operator, the shared store and
// the tenants' locks, up and Ready before any worker starts.

// stack is what the workers run against, as startStack leaves it.
type stack struct {
	env        *kubetest.Env
	kubeconfig string
	storeAddr  string // the fenced ledger's Redis
}

// startStack starts the control plane, the two Redis servers and the
// operator, and applies the store and the tenants' locks, returning once
// they are Ready.
// Everything it starts is stopped by d.cleanup.
func (d *demo) startStack(ctx context.Context, bin string) (*stack, error) {
	dir, err := os.MkdirTemp("", "redlease-demo-")
	if err != nil {
		return nil, err
	}
	d.onCleanup(func() { _ = os.RemoveAll(dir) }) // a temporary directory: leaving it behind fails nothing

	d.step("starting a control plane: etcd and kube-apiserver from bin/ (built from source), CRDs from config/crd/bases")
	env, err := kubetest.New()
	if err != nil {
		return nil, err
	}
	d.onCleanup(func() { _ = env.Stop() })
	st := &stack{env: env, kubeconfig: filepath.Join(dir, "kubeconfig")}
	if err := env.WriteKubeconfig(st.kubeconfig); err != nil {
		return nil, err
	}

	d.step("starting two redis-servers on 127.0.0.1: the shared lock store (password-protected, ACLs on), and the fenced ledger")
	lockRedis, stopLock, err := redistest.StartForMain(redistest.WithPassword(adminPassword))
	if err != nil {
		return nil, err
	}
	d.onCleanup(stopLock)
	storeRedis, stopStore, err := redistest.StartForMain()
	if err != nil {
		return nil, err
	}
	d.onCleanup(stopStore)
	st.storeAddr = storeRedis.Addr()

	d.step("starting the operator (bin/manager --allow-inline-locks=false: locks must use a store), log in %s", filepath.Join(dir, "manager.log"))
	if err := d.spawnLogged(filepath.Join(dir, "manager.log"), []string{"KUBECONFIG=" + st.kubeconfig}, filepath.Join(bin, "manager"),
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--probe-interval=1s", "--allow-inline-locks=false"); err != nil {
		return nil, err
	}
	if err := d.applyStore(ctx, env.Client, lockRedis.Addr()); err != nil {
		return nil, err
	}
	return st, nil
}

// applyStore creates the platform team's side (the controller's password
// Secret and the ClusterLockStore) and the tenants' side (labelled
// namespaces with one DistributedLock each), and waits until all are Ready.
func (d *demo) applyStore(ctx context.Context, c client.Client, addr string) error {
	d.step("applying ClusterLockStore %s (Standalone %s, isolation ACL, tenants: namespaces labelled %s=true)", storeName, addr, tenantLabel)
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: adminNamespace}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: adminNamespace, Name: "redis-admin"}, StringData: map[string]string{"password": adminPassword}},
		&v1alpha1.ClusterLockStore{ObjectMeta: metav1.ObjectMeta{Name: storeName}, Spec: v1alpha1.ClusterLockStoreSpec{
			Redis:          v1alpha1.RedisSpec{Mode: v1alpha1.RedisModeStandalone, Addresses: []string{addr}},
			ControllerAuth: &v1alpha1.RedisAuth{PasswordSecretRef: &v1alpha1.SecretKeyRef{Namespace: adminNamespace, Name: "redis-admin", Key: "password"}},
			Tenants: &v1alpha1.TenantsSpec{Isolation: v1alpha1.IsolationACL,
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{tenantLabel: "true"}}},
		}},
	}
	var locks []*v1alpha1.DistributedLock
	for _, ns := range tenants {
		dl := &v1alpha1.DistributedLock{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: lockName},
			Spec: v1alpha1.DistributedLockSpec{TTL: &metav1.Duration{Duration: ttl},
				StoreRef: &v1alpha1.StoreReference{Kind: v1alpha1.StoreKindClusterLockStore, Name: storeName}}}
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{tenantLabel: "true"}}}, dl)
		locks = append(locks, dl)
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return err
		}
	}
	d.step("applying DistributedLock %s in namespaces %s (ttl %v, fencing on, storeRef ClusterLockStore/%s)", lockName, strings.Join(tenants, " and "), ttl, storeName)
	for _, dl := range locks {
		if err := waitReady(ctx, c, dl); err != nil {
			return err
		}
		d.step("%s/%s is Ready: effective key %s, credentials in Secret %s/%s (its own Redis ACL user)",
			dl.Namespace, dl.Name, dl.Status.Key, dl.Namespace, dl.Status.CredentialsSecretRef.Name)
	}
	return nil
}

func waitReady(ctx context.Context, c client.Client, dl *v1alpha1.DistributedLock) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		if err := c.Get(ctx, client.ObjectKeyFromObject(dl), dl); err == nil && apimeta.IsStatusConditionTrue(dl.Status.Conditions, v1alpha1.ConditionReady) {
			return nil
		}
		select {
		case <-ctx.Done():
			cond := apimeta.FindStatusCondition(dl.Status.Conditions, v1alpha1.ConditionReady)
			return fmt.Errorf("%s/%s not Ready after a minute (condition: %+v); see the manager log", dl.Namespace, dl.Name, cond)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
