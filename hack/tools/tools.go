//go:build tools

// Package tools records the source packages that hack/install-tools.sh builds,
// so that `go mod tidy` keeps their dependencies in go.sum.
package tools

import (
	_ "go.etcd.io/etcd/server/v3/etcdmain"
	_ "k8s.io/kubectl/pkg/cmd"
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	_ "k8s.io/kubernetes/cmd/kube-proxy/app"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
	_ "k8s.io/kubernetes/cmd/kubelet/app"
)
