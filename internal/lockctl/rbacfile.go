/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/podrbac"
)

// manifestDoc is what rbac -f reads of each document: enough to pick the
// DistributedLocks out of a file that holds other objects too (a GitOps
// directory's manifests, or a List from kubectl get -o yaml).
type manifestDoc struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Items of a List, kept as they are to be read again as documents.
	Items []map[string]any `json:"items"`
}

// locksFromManifests reads the DistributedLocks of the YAML or JSON
// documents in r (other kinds are skipped), as written: no status is
// needed, the credentials Secret's name comes from the spec
// (podrbac.LockSecretName) as the controller derives it.
func locksFromManifests(r io.Reader) ([]v1alpha1.DistributedLock, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var locks []v1alpha1.DistributedLock
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return locks, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the manifests: %w", err)
		}
		found, err := locksOfDoc(doc)
		if err != nil {
			return nil, err
		}
		locks = append(locks, found...)
	}
}

// locksOfDoc is the DistributedLocks of one document: itself, or the items
// of a List.
func locksOfDoc(doc []byte) ([]v1alpha1.DistributedLock, error) {
	var d manifestDoc
	if err := yaml.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("reading the manifests: %w", err)
	}
	if d.Kind == "List" {
		var out []v1alpha1.DistributedLock
		for _, item := range d.Items {
			b, err := yaml.Marshal(item)
			if err != nil {
				return nil, err
			}
			found, err := locksOfDoc(b)
			if err != nil {
				return nil, err
			}
			out = append(out, found...)
		}
		return out, nil
	}
	gv, err := schema.ParseGroupVersion(d.APIVersion)
	if err != nil || gv.Group != v1alpha1.GroupVersion.Group || d.Kind != "DistributedLock" {
		return nil, nil //nolint:nilerr // another kind (or no object at all): not a lock, skipped
	}
	var dl v1alpha1.DistributedLock
	if err := yaml.UnmarshalStrict(doc, &dl); err != nil {
		return nil, fmt.Errorf("reading DistributedLock %q: %w", dl.Name, err)
	}
	return []v1alpha1.DistributedLock{dl}, nil
}

// rbacFromFile is rbac -f: the namespace and credentials Secrets of the
// DistributedLocks in the file ("-": stdin), every one or those args name
// ([NAMESPACE/]NAME), read with no API server. A lock without
// metadata.namespace is in ns (-n); one of them must say.
func rbacFromFile(path, ns string, args []string, stdin io.Reader) (string, []string, error) {
	var names []string
	for _, a := range args {
		n, name, qualified, ok := splitNamespaced(a)
		switch {
		case !ok:
			return "", nil, exit(ExitUsage, fmt.Errorf("%q: want NAME or NAMESPACE/NAME of a DistributedLock", a))
		case qualified:
			if ns != "" && n != ns {
				return "", nil, exit(ExitUsage, fmt.Errorf("%s and namespace %s: a Role is in one namespace", a, ns))
			}
			ns, a = n, name
		}
		names = append(names, a)
	}
	r := stdin
	if path != "-" {
		f, err := os.Open(path) //nolint:gosec // G304: the file the user names
		if err != nil {
			return "", nil, err
		}
		defer func() { _ = f.Close() }()
		r = f
	}
	locks, err := locksFromManifests(r)
	if err != nil {
		return "", nil, err
	}
	var (
		secrets []string
		seen    []string
	)
	for i := range locks {
		dl := &locks[i]
		if len(names) > 0 && !slices.Contains(names, dl.Name) {
			continue
		}
		lockNS := dl.Namespace
		if lockNS == "" {
			lockNS = ns
		}
		if lockNS == "" {
			return "", nil, exit(ExitUsage, fmt.Errorf("DistributedLock %q in %s has no metadata.namespace: pass -n", dl.Name, path))
		}
		if ns != "" && lockNS != ns {
			return "", nil, exit(ExitUsage, fmt.Errorf("DistributedLock %s/%s and namespace %s: a Role is in one namespace", lockNS, dl.Name, ns))
		}
		ns = lockNS
		seen = append(seen, dl.Name)
		if name := podrbac.LockSecretName(dl); !slices.Contains(secrets, name) {
			secrets = append(secrets, name)
		}
	}
	for _, n := range names {
		if !slices.Contains(seen, n) {
			return "", nil, exit(ExitUsage, fmt.Errorf("%s holds no DistributedLock %q", path, n))
		}
	}
	if len(seen) == 0 {
		return "", nil, exit(ExitUsage, fmt.Errorf("%s holds no DistributedLock", path))
	}
	return ns, secrets, nil
}
