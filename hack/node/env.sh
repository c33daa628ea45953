# Settings shared by hack/node/*.sh (sourced). One cluster per machine: the
# names, ports and paths below are global, so a lock file keeps a second run
# out (see lock in up.sh/run.sh). NODE-NOTES.md explains each setting.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
NODE_DIR=${REDLEASE_NODE_DIR:-/var/tmp/redlease-node}
NODE_LOCK=/run/redlease-node.lock
NODE_NAME=redlease-node
# The bridge of the node's own, and its pod subnet; Services elsewhere. up.sh
# refuses to start when either overlaps a route of the host.
BRIDGE=rlnode0
BRIDGE_IP=10.213.0.1
POD_CIDR=10.213.0.0/24
SVC_CIDR=10.214.0.0/24
KUBERNETES_SVC_IP=10.214.0.1
# Non-default ports: etcd and the components' health/metrics on loopback, the
# API server and the kubelet on the bridge.
ETCD_CLIENT_PORT=23790
ETCD_PEER_PORT=23800
APISERVER_PORT=16443
KUBELET_PORT=20250
KUBELET_HEALTHZ_PORT=20248
PROXY_HEALTHZ_PORT=20256
PROXY_METRICS_PORT=20249
SCHEDULER_PORT=20259
CONTROLLER_MANAGER_PORT=20257
# The scenarios' OCI registry (hack/ocibuild/cmd/registry) on the bridge:
# containerd pulls from it, and only from it (hosts.toml in up.sh).
REGISTRY=$BRIDGE_IP:25050
# containerd's name for the pause image, imported by images.sh.
PAUSE_IMAGE=registry.local/redlease/pause:v1
REDIS_IMAGE=registry.local/redlease/redis
DEMO_IMAGE=registry.local/redlease/demo:v1
# The lock agent's Python and Node examples (scenario 8a).
PYTHON_IMAGE=registry.local/redlease/python-ledger:v1
NODEJS_IMAGE=registry.local/redlease/node-ledger:v1
# The sysctls the kubelet, kube-proxy and the bridge plugin may change:
# up.sh records them, down.sh puts them back.
SYSCTLS=(kernel.panic kernel.panic_on_oops vm.overcommit_memory net.ipv4.ip_forward net.ipv4.conf.all.route_localnet net.bridge.bridge-nf-call-iptables)
# Fixed paths the kubelet and the CNI plugins write whatever their flags say.
HOST_PATHS=(/var/lib/cni /var/lib/kubelet /var/log/containers /var/log/pods /run/containerd)
# Everything the harness does to the host goes through the one state file:
# PIDs started, sysctls and paths found before.
STATE=$NODE_DIR/state
export KUBECONFIG=$NODE_DIR/pki/admin.kubeconfig
export PATH=$root/bin:/usr/sbin:/sbin:$PATH

say() { printf '[node %s] %s\n' "$(date +%T)" "$*" >&2; }
