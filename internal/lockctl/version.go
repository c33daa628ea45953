/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/redlease/redlease/api/v1alpha1"
	"github.com/redlease/redlease/internal/version"
)

// managerLabels select the manager's Deployment, the chart's and
// config/default's alike.
var managerLabels = client.MatchingLabels{"app.kubernetes.io/name": "redlease", "app.kubernetes.io/component": "manager"}

// versionReport is what `lockctl version` prints.
type versionReport struct {
	Client version.Info    `json:"client"`
	Server *serverVersions `json:"server,omitempty"`
}

// serverVersions is what lockctl can see of the cluster's side.
type serverVersions struct {
	Kubernetes string `json:"kubernetes"`
	// CRDVersions are the redlease.io versions the API server serves.
	CRDVersions []string `json:"crdVersions"`
	// ManagerImages are the images of the manager Deployments lockctl
	// may list, as NAMESPACE/NAME=IMAGE; ManagerError says why none.
	ManagerImages []string `json:"managerImages,omitempty"`
	ManagerError  string   `json:"managerError,omitempty"`
}

func newVersionCommand(stdout io.Writer) *cobra.Command {
	var (
		kube       kubeFlags
		clientOnly bool
		output     string
	)
	cmd := &cobra.Command{
		Use:   "version [--client] [-o text|json]",
		Short: "Print lockctl's version and, with a cluster, the redlease.io versions it serves and the manager's image",
		Args:  usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" {
				return exit(ExitUsage, fmt.Errorf("-o %q: want text or json", output))
			}
			r := versionReport{Client: version.Get()}
			var serverErr error
			if !clientOnly {
				// Without a cluster configured, the client's side only;
				// a kubeconfig or context asked for must load.
				cfg, err := kube.restConfig()
				switch {
				case err == nil:
					r.Server, serverErr = readServerVersions(cmd.Context(), cfg)
				case kube.explicit():
					serverErr = err
				}
			}
			if output == "json" {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(r); err != nil {
					return err
				}
			} else {
				printVersions(stdout, r)
			}
			return serverErr
		},
	}
	kube.registerConnection(cmd.Flags())
	cmd.Flags().BoolVar(&clientOnly, "client", false, "print lockctl's version only, without reading the cluster")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}

func printVersions(w io.Writer, r versionReport) {
	printf(w, "lockctl: %s\n", r.Client)
	s := r.Server
	if s == nil {
		return
	}
	printf(w, "kubernetes: %s\n", s.Kubernetes)
	printf(w, "%s served: %v\n", v1alpha1.GroupVersion.Group, s.CRDVersions)
	for _, m := range s.ManagerImages {
		printf(w, "manager: %s\n", m)
	}
	if s.ManagerError != "" {
		printf(w, "manager: %s\n", s.ManagerError)
	}
}

// readServerVersions reads the API server's version, the redlease.io
// versions it serves (no CRDs: none), and the manager Deployments' images
// when lockctl may list Deployments; only an unreachable API server is an
// error.
func readServerVersions(ctx context.Context, cfg *rest.Config) (*serverVersions, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the API server: %w", err)
	}
	kv, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the API server's version: %w", err)
	}
	s := &serverVersions{Kubernetes: kv.GitVersion, CRDVersions: []string{}}
	groups, err := dc.ServerGroups()
	if err != nil {
		return nil, fmt.Errorf("reading the API groups: %w", err)
	}
	for _, g := range groups.Groups {
		if g.Name == v1alpha1.GroupVersion.Group {
			for _, v := range g.Versions {
				s.CRDVersions = append(s.CRDVersions, v.Version)
			}
		}
	}
	images, err := managerImages(ctx, cfg)
	if err != nil {
		s.ManagerError = "not visible: " + err.Error()
	} else if len(images) == 0 {
		s.ManagerError = "no Deployment labelled app.kubernetes.io/name=redlease,app.kubernetes.io/component=manager"
	}
	s.ManagerImages = images
	return s, nil
}

// managerImages lists the manager Deployments in every namespace and
// returns their manager container's image.
func managerImages(ctx context.Context, cfg *rest.Config) ([]string, error) {
	scheme := runtime.NewScheme()
	if err := appsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	var list appsv1.DeploymentList
	if err := c.List(ctx, &list, managerLabels); err != nil {
		return nil, err
	}
	var out []string
	for _, d := range list.Items {
		for _, ct := range d.Spec.Template.Spec.Containers {
			if ct.Name == "manager" {
				out = append(out, d.Namespace+"/"+d.Name+"="+ct.Image)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}
