#!/usr/bin/env bash
# make test-node: installs what the node needs, brings a single-node cluster
# up (up.sh), runs the scenarios in test/node with helm and kubectl, and
# tears everything down (down.sh) on every exit path: success, failure,
# Ctrl-C. One cluster per machine: the lock file keeps a second run out.
#
#   hack/node/run.sh [go test -run pattern]   e.g. hack/node/run.sh 'Scenario1|Scenario3'
#
# NODE_OPTIONAL=1 (make test): on a machine that cannot run a node (not
# root, no network namespaces, no cgroups), say why and succeed; on CI
# (CI=true) that fails instead.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$root"

cannot() {
	if [ "${NODE_OPTIONAL:-}" = 1 ] && [ "${CI:-}" != true ]; then
		say "make test-node SKIPPED: $*"
		exit 0
	fi
	say "make test-node cannot run: $*"
	exit 1
}
[ "$(id -u)" = 0 ] || cannot "needs root (a kubelet, containerd, iptables rules, a bridge)"
unshare -n true 2>/dev/null || cannot "cannot create network namespaces (unshare -n)"
[ -d /sys/fs/cgroup/memory ] || [ -f /sys/fs/cgroup/cgroup.controllers ] || cannot "no cgroup hierarchy under /sys/fs/cgroup"
exec 9>"$NODE_LOCK"
if ! flock -n 9; then
	say "another node cluster runs on this machine (lock $NODE_LOCK): waiting up to 15 minutes"
	flock -w 900 9 || { say "the lock $NODE_LOCK is still held"; exit 1; }
fi

# The kubelet evicts pods and admits none once its filesystem is nearly
# full (up.sh: evictionHard 1 %); the scenarios would then time out waiting
# for pods that never start. Say so at once instead. Images, containers
# and the control plane take a few GiB.
mkdir -p "$(dirname "$NODE_DIR")"
free_kib=$(df -Pk "$(dirname "$NODE_DIR")" | awk 'NR == 2 {print $4}')
if [ "$free_kib" -lt $((8 * 1024 * 1024)) ]; then
	cannot "only $((free_kib / 1024 / 1024)) GiB free under $(dirname "$NODE_DIR"), want 8 (the Go build cache is often the largest: go clean -cache)"
fi

t0=$(date +%s)
missing=()
for b in runc:runc /usr/lib/cni/bridge:containernetworking-plugins iptables:iptables conntrack:conntrack; do
	command -v "${b%%:*}" >/dev/null 2>&1 || missing+=("${b#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
	say "installing Debian's ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
hack/install-redis.sh
hack/install-tools.sh etcd kube-apiserver kubectl helm cosign node
say "images"
hack/node/images.sh >/dev/null
say "tools and images ready in $(($(date +%s) - t0)) s"

status=0
teardown() {
	trap - EXIT INT TERM
	hack/node/down.sh || status=1
	say "make test-node took $(($(date +%s) - t0)) s"
	exit "$status"
}
trap teardown EXIT
trap 'status=130; exit 130' INT TERM
hack/node/up.sh || { status=1; exit 1; }

say "scenarios"
REDLEASE_NODE=1 NODE_DIR=$NODE_DIR PAUSE_IMAGE=$PAUSE_IMAGE DEMO_IMAGE=$DEMO_IMAGE PYTHON_IMAGE=$PYTHON_IMAGE NODEJS_IMAGE=$NODEJS_IMAGE REGISTRY=$REGISTRY \
	REDIS_IMAGE="$(cat "$root/dist/node/redis.tag")" \
	go test -count=1 -v -timeout 40m ./test/node/ -run "${1:-.}" 2>&1 | tee "$NODE_DIR/log/scenarios.log" || status=1
grep -E '^--- |^=== RUN|TIME ' "$NODE_DIR/log/scenarios.log" | grep -E -- '--- |TIME ' >&2 || true
