package kube

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redis/go-redis/v9"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/protocol"
	"github.com/redlease/redlease/pkg/lock"
)

// ErrNotReady reports a DistributedLock whose Ready condition is not True:
// the controller has not resolved it, or a safety property it asks for is
// not in force. The error names the condition's reason and message.
var ErrNotReady = errors.New("kube: DistributedLock not ready")

// identity is what makes a DistributedLock the lock it is: the effective
// key and where it lives (mode, db, the spec's addresses or Service, the
// Sentinel master name). Two bindings of different identities are two
// locks. It leaves out status.master, which moves on a failover and must be
// followed, and settings that do not move the lock (TTL, credentials, TLS).
type identity struct {
	key        string
	mode       v1alpha1.RedisMode
	db         int32
	addresses  string // the spec's, sorted: order does not matter
	service    string
	masterName string
}

func identityOf(dl *v1alpha1.DistributedLock, key string) identity {
	r := &dl.Spec.Redis
	id := identity{key: key, mode: r.Mode, db: r.DB}
	addrs := slices.Sorted(slices.Values(r.Addresses))
	id.addresses = strings.Join(addrs, ", ")
	if r.Service != nil {
		id.service = fmt.Sprintf("%s:%d", r.Service.Name, r.Service.Port)
	}
	if r.Sentinel != nil {
		id.masterName = r.Sentinel.MasterName
	}
	return id
}

// String names the key and the servers, for errors.
func (id identity) String() string {
	where := "[" + id.addresses + "]"
	switch {
	case id.service != "":
		where = "Service " + id.service
	case id.masterName != "":
		where = fmt.Sprintf("Sentinel master %q", id.masterName)
	}
	return fmt.Sprintf("key %q on %s %s db %d", id.key, id.mode, where, id.db)
}

// target is everything a connection to the lock's Redis depends on. Two
// targets with the same fingerprint can share one lock.Locker.
type target struct {
	id            identity
	mode          v1alpha1.RedisMode
	key           string
	addrs         []string // Standalone/Replicated: the master; Cluster: seeds; Redlock: nodes
	masterName    string
	sentinelAddrs []string
	username      string
	password      string
	sentinelUser  string
	sentinelPass  string
	tls           *tls.Config
	caPEM         []byte
	db            int
	ttl           time.Duration
	renew         time.Duration
	fencing       bool
	replicaAcks   int
}

// resolve turns the resource into a target, reading the Secrets it names.
func resolve(ctx context.Context, c client.Reader, dl *v1alpha1.DistributedLock) (target, error) {
	if err := checkReady(dl); err != nil {
		return target{}, err
	}
	t := leaseSettings(dl)
	if err := t.setServers(dl); err != nil {
		return target{}, err
	}
	if err := t.setCredentials(ctx, c, dl); err != nil {
		return target{}, err
	}
	return t, nil
}

// checkReady returns an ErrNotReady error unless the resource's Ready
// condition is True for its current generation.
func checkReady(dl *v1alpha1.DistributedLock) error {
	ready := apimeta.FindStatusCondition(dl.Status.Conditions, v1alpha1.ConditionReady)
	switch {
	case ready == nil:
		return fmt.Errorf("%w: %s/%s has no Ready condition yet (is the redlease controller running?)", ErrNotReady, dl.Namespace, dl.Name)
	case ready.Status != metav1.ConditionTrue:
		return fmt.Errorf("%w: %s/%s: %s: %s", ErrNotReady, dl.Namespace, dl.Name, ready.Reason, ready.Message)
	case ready.ObservedGeneration != 0 && ready.ObservedGeneration < dl.Generation:
		return fmt.Errorf("%w: %s/%s: the controller has not yet seen generation %d", ErrNotReady, dl.Namespace, dl.Name, dl.Generation)
	}
	return nil
}

// leaseSettings returns the target's key, identity and lease settings, with
// the spec's defaults filled in; no servers or credentials yet.
func leaseSettings(dl *v1alpha1.DistributedLock) target {
	spec := &dl.Spec
	t := target{
		mode:    spec.Redis.Mode,
		key:     spec.Key,
		db:      int(spec.Redis.DB),
		ttl:     spec.TTLOrDefault(),
		fencing: spec.FencingEnabled(),
	}
	if t.key == "" {
		t.key = protocol.DefaultKey(dl.Namespace, dl.Name)
	}
	t.id = identityOf(dl, t.key)
	t.renew = lock.DefaultRenewInterval(t.ttl)
	if spec.RenewInterval != nil {
		t.renew = spec.RenewInterval.Duration
	}
	if spec.Safety != nil {
		t.replicaAcks = int(spec.Safety.WaitForReplicas)
	}
	return t
}

// setServers sets the servers for t's mode: the master from status
// (Standalone, Replicated), the Sentinels from the spec, the Cluster seeds
// from the spec or else the masters in status, the Redlock nodes from the
// spec only.
func (t *target) setServers(dl *v1alpha1.DistributedLock) error {
	spec := &dl.Spec
	switch t.mode {
	case v1alpha1.RedisModeStandalone, v1alpha1.RedisModeReplicated:
		if dl.Status.Master == "" {
			return fmt.Errorf("%w: %s/%s: no master in status", ErrNotReady, dl.Namespace, dl.Name)
		}
		t.addrs = []string{dl.Status.Master}
	case v1alpha1.RedisModeSentinel:
		t.masterName = spec.Redis.Sentinel.MasterName
		t.sentinelAddrs = spec.Redis.Sentinel.Addresses
	case v1alpha1.RedisModeCluster:
		t.addrs = spec.Redis.Addresses
		if len(t.addrs) == 0 { // a Service: the controller resolved it
			t.addrs = statusMasters(dl.Status.Endpoints)
		}
		if len(t.addrs) == 0 {
			return fmt.Errorf("%w: %s/%s: no endpoints in status", ErrNotReady, dl.Namespace, dl.Name)
		}
	case v1alpha1.RedisModeRedlock:
		// The nodes, and so the quorum (len/2+1), come from the spec only:
		// never from what the controller found ready, which would let two
		// pods count different majorities. A node that does not answer is
		// a failed vote.
		if spec.Redis.Service != nil || len(spec.Redis.Addresses) == 0 {
			return fmt.Errorf("%w: %s/%s: Redlock needs spec.redis.addresses, an explicit odd list of ≥ 3 stable addresses (a Service's endpoints would change the quorum): delete and re-create the lock with addresses",
				ErrNotReady, dl.Namespace, dl.Name)
		}
		t.addrs = spec.Redis.Addresses
	default:
		return fmt.Errorf("kube: %s/%s: unknown mode %q", dl.Namespace, dl.Name, t.mode)
	}
	return nil
}

// statusMasters returns the addresses of the endpoints in status with the
// master role, in order.
func statusMasters(endpoints []v1alpha1.EndpointStatus) []string {
	var addrs []string
	for _, e := range endpoints {
		if e.Role == v1alpha1.EndpointRoleMaster {
			addrs = append(addrs, e.Address)
		}
	}
	return addrs
}

// setCredentials sets the user names, and the passwords and CA certificate
// read from the Secrets the spec names.
func (t *target) setCredentials(ctx context.Context, c client.Reader, dl *v1alpha1.DistributedLock) error {
	spec := &dl.Spec
	var err error
	t.username = spec.Redis.Username
	if t.password, err = secretValue(ctx, c, dl.Namespace, spec.Redis.PasswordSecretRef); err != nil {
		return err
	}
	if s := spec.Redis.Sentinel; s != nil {
		t.sentinelUser = s.Username
		if t.sentinelPass, err = secretValue(ctx, c, dl.Namespace, s.PasswordSecretRef); err != nil {
			return err
		}
	}
	if spec.Redis.TLS != nil && spec.Redis.TLS.Enabled {
		return t.setTLS(ctx, c, dl.Namespace, spec.Redis.TLS)
	}
	return nil
}

// setTLS sets the client TLS config, with the CA from its Secret if named.
func (t *target) setTLS(ctx context.Context, c client.Reader, namespace string, spec *v1alpha1.TLSSpec) error {
	t.tls = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: spec.ServerName, InsecureSkipVerify: spec.InsecureSkipVerify} //nolint:gosec // the user asked for it
	ref := spec.CASecretRef
	if ref == nil {
		return nil
	}
	ca, err := secretValue(ctx, c, namespace, ref)
	if err != nil {
		return err
	}
	t.caPEM = []byte(ca)
	t.tls.RootCAs = x509.NewCertPool()
	if !t.tls.RootCAs.AppendCertsFromPEM(t.caPEM) {
		return fmt.Errorf("kube: Secret %s/%s key %q holds no PEM certificate", namespace, ref.Name, ref.Key)
	}
	return nil
}

func secretValue(ctx context.Context, c client.Reader, namespace string, ref *v1alpha1.SecretKeyRef) (string, error) {
	if ref == nil {
		return "", nil
	}
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, &s); err != nil {
		return "", fmt.Errorf("kube: reading Secret %s/%s: %w", namespace, ref.Name, err)
	}
	v, ok := s.Data[ref.Key]
	if !ok {
		return "", fmt.Errorf("kube: Secret %s/%s has no key %q", namespace, ref.Name, ref.Key)
	}
	return string(v), nil
}

// fingerprint identifies the connection and lease settings; secrets enter
// only through a hash.
func (t target) fingerprint() string {
	h := sha256.New()
	// hash.Hash's Write never returns an error, so neither does Fprintf.
	_, _ = fmt.Fprintf(h, "%s|%s|%q|%s|%q|%s|%s|%s|%s|%d|%v|%v|%v|%d|%v|%s|%v",
		t.mode, t.key, t.addrs, t.masterName, t.sentinelAddrs, t.username, t.password, t.sentinelUser, t.sentinelPass,
		t.db, t.ttl, t.renew, t.fencing, t.replicaAcks, t.tls != nil, t.caPEM, t.tls != nil && t.tls.InsecureSkipVerify)
	if t.tls != nil {
		_, _ = fmt.Fprint(h, t.tls.ServerName)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// replicaAckTimeout bounds WAIT: long enough for a healthy replica, short
// against the TTL so a missing replica costs little validity.
func (t target) replicaAckTimeout() time.Duration { return min(t.ttl/5, 2*time.Second) }

// connect builds the lock.Locker for t and the clients it owns. The clients
// honour context deadlines on reads (ContextTimeoutEnabled), so a renewal
// stops waiting for a paused server when the lease's validity ends.
func (t target) connect(opts []lock.Option) (*lock.Locker, []redis.UniversalClient, error) {
	base := []lock.Option{lock.WithTTL(t.ttl), lock.WithRenewInterval(t.renew), lock.WithFencing(t.fencing)}
	if t.replicaAcks > 0 {
		base = append(base, lock.WithReplicaAck(t.replicaAcks, t.replicaAckTimeout()))
	}
	opts = append(base, opts...)
	var clients []redis.UniversalClient
	switch t.mode {
	case v1alpha1.RedisModeSentinel:
		clients = append(clients, redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: t.masterName, SentinelAddrs: t.sentinelAddrs,
			SentinelUsername: t.sentinelUser, SentinelPassword: t.sentinelPass,
			Username: t.username, Password: t.password, DB: t.db, TLSConfig: t.tls,
			ContextTimeoutEnabled: true,
		}))
	case v1alpha1.RedisModeCluster:
		clients = append(clients, redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: t.addrs, Username: t.username, Password: t.password, TLSConfig: t.tls,
			ContextTimeoutEnabled: true,
		}))
	default:
		for _, a := range t.addrs {
			clients = append(clients, redis.NewClient(&redis.Options{
				Addr: a, Username: t.username, Password: t.password, DB: t.db, TLSConfig: t.tls,
				ContextTimeoutEnabled: true,
			}))
		}
	}
	var (
		l   *lock.Locker
		err error
	)
	if t.mode == v1alpha1.RedisModeRedlock {
		l, err = lock.NewRedlock(clients, opts...)
	} else {
		l, err = lock.New(clients[0], opts...)
	}
	if err != nil {
		closeAll(clients)
		return nil, nil, err
	}
	return l, clients, nil
}

func closeAll(clients []redis.UniversalClient) {
	for _, c := range clients {
		_ = c.Close()
	}
}
