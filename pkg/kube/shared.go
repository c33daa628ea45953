/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package kube

import (
	"crypto/sha256"
	"fmt"
	"reflect"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/redlease/redlease/api/v1alpha1"
)

// clients is the process's one registry of API clients: every Locker made
// with an equal rest.Config (sharingKey) shares one apiClient, and every
// Locker of one namespace on it shares one namespaceWatch. Both live as
// long as a Locker uses them.
var clients = registry{byKey: map[any]*apiClient{}}

type registry struct {
	mu    sync.Mutex
	byKey map[any]*apiClient
}

// apiClient is one client of the API server, as one identity: an HTTP
// client (one connection pool) serving the reads and watches of every
// Locker made with an equal rest.Config, and their credentials Secrets'
// cache.
type apiClient struct {
	key any
	// reader gets the credentials Secrets, and a DistributedLock the watch
	// has not brought yet. Its RESTMapper is static: no discovery requests.
	reader client.Reader
	// locks lists and watches distributedlocks.
	locks   rest.Interface
	secrets *secretCache

	// Guarded by registry.mu.
	refs    int                        // Lockers
	watches map[string]*namespaceWatch // by namespace
}

// join returns the watch of namespace through the client for cfg, with a
// reference for a new Locker, building and starting what does not exist
// yet. Nothing here calls the API server: the watch's first list runs in
// its own goroutine (namespaceWatch.add waits for it).
func (r *registry) join(cfg *rest.Config, namespace string) (*namespaceWatch, error) {
	key := sharingKey(cfg)
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.byKey[key]
	if c == nil {
		var err error
		if c, err = newAPIClient(key, cfg); err != nil {
			return nil, err
		}
		r.byKey[key] = c
	}
	w := c.watches[namespace]
	if w == nil {
		w = startWatch(c, namespace)
		c.watches[namespace] = w
	}
	c.refs++
	w.refs++
	return w, nil
}

// leave drops a reference join returned. The last one of a namespace stops
// its watch (and waits for it to end); the last one of a client forgets it.
func (r *registry) leave(w *namespaceWatch) {
	r.mu.Lock()
	c := w.client
	w.refs--
	last := w.refs == 0
	if last {
		delete(c.watches, w.namespace)
	}
	c.refs--
	if c.refs == 0 {
		delete(r.byKey, c.key)
	}
	r.mu.Unlock()
	if last {
		w.stop()
	}
}

var scheme = sync.OnceValues(func() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, v1alpha1.AddToScheme(s)
})

func newAPIClient(key any, cfg *rest.Config) (*apiClient, error) {
	s, err := scheme()
	if err != nil {
		return nil, err
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube: building a client: %w", err)
	}
	// The two kinds a pod reads, both namespaced: a static mapper saves
	// the discovery requests a dynamic one would make for every client.
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(v1alpha1.GroupVersion.WithKind("DistributedLock"), meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Secret"), meta.RESTScopeNamespace)
	reader, err := client.New(cfg, client.Options{Scheme: s, HTTPClient: httpClient, Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("kube: building a client: %w", err)
	}
	locks, err := apiutil.RESTClientForGVK(v1alpha1.GroupVersion.WithKind("DistributedLock"), false, false, cfg, serializer.NewCodecFactory(s), httpClient)
	if err != nil {
		return nil, fmt.Errorf("kube: building a client: %w", err)
	}
	return &apiClient{key: key, reader: reader, locks: locks, secrets: newSecretCache(reader), watches: map[string]*namespaceWatch{}}, nil
}

// sharingKey says which rest.Configs may share a client: equal ones, by
// the fields that decide where requests go and as whom (a config from
// rest.InClusterConfig or clientcmd per goroutine shares with the others).
// A config that sets anything else — a transport, a wrapper, a dialer, an
// exec or auth provider, any field added to rest.Config later — cannot be
// compared by value, and shares only with itself (the same pointer):
// wrongly merging two identities would be worse than two watches.
func sharingKey(cfg *rest.Config) any {
	c, tls, imp := *cfg, cfg.TLSClientConfig, cfg.Impersonate
	token := c.BearerToken
	if c.BearerTokenFile != "" {
		// The transport reads the file again as it changes; the token is
		// the file's content when the config was made, and differs between
		// configs made before and after a rotation.
		token = ""
	}
	compared := []any{c.Host, c.APIPath, c.AcceptContentTypes, c.ContentType,
		c.Username, c.Password, token, c.BearerTokenFile,
		imp.UserName, imp.UID, imp.Groups, imp.Extra,
		tls.Insecure, tls.ServerName, tls.CertFile, tls.KeyFile, tls.CAFile, tls.CertData, tls.KeyData, tls.CAData, tls.NextProtos,
		c.UserAgent, c.DisableCompression, c.QPS, c.Burst, c.Timeout}
	c.Host, c.APIPath, c.AcceptContentTypes, c.ContentType = "", "", "", ""
	c.Username, c.Password, c.BearerToken, c.BearerTokenFile = "", "", "", ""
	c.Impersonate, c.TLSClientConfig = rest.ImpersonationConfig{}, rest.TLSClientConfig{}
	c.UserAgent, c.DisableCompression, c.QPS, c.Burst, c.Timeout = "", false, 0, 0, 0
	if !reflect.ValueOf(c).IsZero() {
		return cfg
	}
	// Field by field, never through rest.Config's or TLSClientConfig's
	// String, which redact the keys and tokens. fmt prints maps sorted by
	// key (Impersonate.Extra): equal configs give equal digests. A digest,
	// so that no copy of the credentials stays in the registry.
	h := sha256.New()
	for _, v := range compared {
		// hash.Hash's Write never returns an error, so neither does Fprintf.
		_, _ = fmt.Fprintf(h, "%#v\n", v)
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}
