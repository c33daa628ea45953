#!/usr/bin/env bash
# Builds every tool the tests and manifests need from source (Go module proxy
# only: prebuilt downloads cannot work here) and caches them outside the clone,
# keyed by version, because CI runs in a fresh clone on the same machine.
# Links the cached binaries into ./bin. Idempotent; a warm run takes a second.
#
# Usage: hack/install-tools.sh [tool...]   (default: all)
#   tools: kube-apiserver etcd kubectl helm controller-gen golangci-lint
#          proto (buf protoc-gen-go protoc-gen-connect-go: make generate)
#          node (kubelet kube-scheduler kube-controller-manager kube-proxy
#          containerd containerd-shim-runc-v2 ctr: make test-node's cluster)
#          hugo (make docs: the static site from docs/)
#          actionlint (make lint: the workflows under .github/workflows)
#          cosign (make publish: signing; the release tests: verifying)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
K8S_VERSION=v1.37.2
HELM_VERSION=v3.22.0
CONTROLLER_TOOLS_VERSION=v0.23.0
GOLANGCI_LINT_VERSION=v2.15.0
CONTAINERD_VERSION=v2.4.2
BUF_VERSION=v1.75.0
PROTOBUF_VERSION=v1.36.12
CONNECT_VERSION=v1.21.1
# The newest Hugo whose go.mod asks for no newer Go than the go directive
# of ours (v0.166.0 on need Go 1.27).
HUGO_VERSION=v0.165.0
ACTIONLINT_VERSION=v1.7.12
# The newest cosign v2 on the proxy; its go.mod asks for Go 1.25. The release
# workflow installs the same version (.github/workflows/release.yml).
COSIGN_VERSION=v2.6.5
cache=${REDLEASE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/redlease}
bin=$root/bin
mkdir -p "$bin"

say() { printf '[install-tools] %s\n' "$*" >&2; }

# k8s_ldflags stamps the version the binaries report; without it helm and
# kubectl see the API server as v0.0.0-master.
major=${K8S_VERSION#v}; minor=${major#*.}; minor=${minor%%.*}; major=${major%%.*}
k8s_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor"

# build_k8s NAME PACKAGE builds one binary of the hack/tools module.
build_k8s() {
	local name=$1 pkg=$2 dir=$cache/k8s-$K8S_VERSION
	if [ ! -x "$dir/$name" ]; then
		say "building $name $K8S_VERSION from source (cold: a few minutes; cached in $dir)"
		mkdir -p "$dir"
		(cd "$root/hack/tools" && CGO_ENABLED=0 go build -trimpath -ldflags "$k8s_ldflags" -o "$dir/$name.tmp" "$pkg")
		mv "$dir/$name.tmp" "$dir/$name"
	fi
	ln -sf "$dir/$name" "$bin/$name"
}

# go_install NAME MODULE@VERSION [SUFFIX LDFLAGS TAGS] installs a standalone
# Go command into the cache; SUFFIX names the build in the cache key when
# LDFLAGS or TAGS change it.
go_install() {
	local name=$1 target=$2 dir=$cache/${1}-${2##*@}${3:+-$3} ldflags=${4:-} tags=${5:-}
	if [ ! -x "$dir/$name" ]; then
		say "building $target (cold: one to a few minutes; cached in $dir)"
		mkdir -p "$dir"
		GOBIN=$dir CGO_ENABLED=0 go install -ldflags "$ldflags" -tags "$tags" "$target"
	fi
	ln -sf "$dir/$name" "$bin/$name"
}

# containerd's storage and plugin backends that need cgo or kernel features
# the node does not use; the overlayfs/native snapshotters stay.
containerd_tags="no_btrfs no_devmapper no_zfs no_aufs no_dynamic_plugins"
containerd() {
	go_install "$1" "github.com/containerd/containerd/v2/cmd/$1@$CONTAINERD_VERSION" static "-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" "$containerd_tags"
}

# helm_ldflags stamp the Kubernetes version helm assumes without a cluster
# (helm template, helm lint), as Helm's own release build does from its
# client-go (v0.37 for v3.22): unstamped, a go-installed helm assumes 1.20
# and refuses the chart's kubeVersion.
HELM_KUBE_MINOR=37
helm_ldflags=""
for pkg in chartutil lint/rules; do
	helm_ldflags+=" -X helm.sh/helm/v3/pkg/$pkg.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/$pkg.k8sVersionMinor=$HELM_KUBE_MINOR"
done

node_tools=(kubelet kube-scheduler kube-controller-manager kube-proxy containerd containerd-shim-runc-v2 ctr)
tools=()
for t in "$@"; do
	case $t in
	node) tools+=("${node_tools[@]}") ;;
	proto) tools+=(buf protoc-gen-go protoc-gen-connect-go) ;;
	*) tools+=("$t") ;;
	esac
done
[ ${#tools[@]} -gt 0 ] || tools=(controller-gen etcd kube-apiserver kubectl helm golangci-lint actionlint cosign buf protoc-gen-go protoc-gen-connect-go)
for t in "${tools[@]}"; do
	case $t in
	kubelet | kube-scheduler | kube-controller-manager | kube-proxy) build_k8s "$t" "k8s.io/kubernetes/cmd/$t" ;;
	containerd | containerd-shim-runc-v2 | ctr) containerd "$t" ;;
	kube-apiserver) build_k8s kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver ;;
	kubectl) build_k8s kubectl k8s.io/kubernetes/cmd/kubectl ;;
	etcd) build_k8s etcd ./cmd/etcd ;;
	helm) go_install helm "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" "k8s1.$HELM_KUBE_MINOR" "$helm_ldflags" ;;
	controller-gen) go_install controller-gen "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_TOOLS_VERSION" ;;
	golangci-lint) go_install golangci-lint "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION" ;;
	buf) go_install buf "github.com/bufbuild/buf/cmd/buf@$BUF_VERSION" ;;
	protoc-gen-go) go_install protoc-gen-go "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOBUF_VERSION" ;;
	hugo) go_install hugo "github.com/gohugoio/hugo@$HUGO_VERSION" ;;
	actionlint) go_install actionlint "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION" "" "-s -w" ;;
	cosign) go_install cosign "github.com/sigstore/cosign/v2/cmd/cosign@$COSIGN_VERSION" "" "-s -w" ;;
	protoc-gen-connect-go) go_install protoc-gen-connect-go "connectrpc.com/connect/cmd/protoc-gen-connect-go@$CONNECT_VERSION" ;;
	*) say "unknown tool $t"; exit 2 ;;
	esac
done
