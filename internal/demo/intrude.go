package demo

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/pkg/kube"
)

// runIntrude is a tenant's pod on a store with isolation ACL, under its
// service account (in-cluster config) and the documented pod Role only. It
// takes its own lock namespace/lockName through pkg/kube ("acquired"),
// then, with its own credentials, tries to take the key other (another
// tenant's: "intrude", whose detail is the refusal) and to read the
// credentials Secret of other's namespace, named secret ("other-secret",
// whose detail is the API server's answer).
func runIntrude(namespace, lockName, other, otherNamespace, secret string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	me := "intruder"
	fail := func(err error) int {
		say(event{Worker: me, Kind: "error", Detail: err.Error()})
		return 1
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return fail(err)
	}
	l, err := kube.NewLocker(ctx, cfg, namespace, lockName)
	if err != nil {
		return fail(err)
	}
	defer func() { _ = l.Close() }()
	lease, err := l.Acquire(ctx)
	if err != nil {
		return fail(err)
	}
	say(event{Worker: me, Kind: "acquired", Fence: lease.Fence()})
	if err := lease.Release(ctx); err != nil {
		return fail(err)
	}
	scheme, err := kubetest.NewScheme()
	if err != nil {
		return fail(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fail(err)
	}
	user, err := takeOthersLock(ctx, c, namespace, lockName, other)
	if err != nil {
		return fail(err)
	}
	say(event{Worker: me, Kind: "intrude", Detail: "Redis user " + user + ": NOPERM on " + other})
	err = c.Get(ctx, client.ObjectKey{Namespace: otherNamespace, Name: secret}, &corev1.Secret{})
	if err == nil {
		say(event{Worker: me, Kind: "other-secret", Detail: "read"})
		return 1
	}
	say(event{Worker: me, Kind: "other-secret", Detail: err.Error()})
	return 0
}
