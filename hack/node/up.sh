#!/usr/bin/env bash
# Brings up a single-node cluster on this machine: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, containerd, kube-proxy and a
# kubelet, on a bridge of its own, with a REJECT rule for anything a pod
# forwards off the bridge. Records what it starts and changes in $STATE so
# that down.sh can undo it; run.sh holds the lock and traps down.sh.
# Settings: ../../../shared/NODE-NOTES.md (the ones that each cost hours).
set -euo pipefail
source "$(dirname "$0")/env.sh"

record() { printf '%s\n' "$*" >>"$STATE"; }

# start NAME CMD... starts a component in the background, its log in
# $NODE_DIR/log/NAME.log, and records its PID for down.sh.
start() {
	local name=$1
	shift
	"$@" >"$NODE_DIR/log/$name.log" 2>&1 &
	record "pid $name $!"
}

# wait_for WHAT SECONDS CMD... polls CMD until it succeeds.
wait_for() {
	local what=$1 secs=$2 i
	shift 2
	for ((i = 0; i < secs * 5; i++)); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.2
	done
	say "$what not ready after ${secs}s; last lines of its log:"
	tail -n 30 "$NODE_DIR/log/$what.log" >&2 || true
	return 1
}

[ -e "$STATE" ] && { say "$STATE exists: a cluster is up or was not torn down; run hack/node/down.sh"; exit 1; }

# The CIDRs must overlap nothing the host routes.
for cidr in $POD_CIDR $SVC_CIDR; do
	if ip -4 route show match "$cidr" | grep -v '^default' | grep -q .; then
		say "$cidr overlaps a route of the host: $(ip -4 route show match "$cidr")"
		exit 1
	fi
done

mkdir -p "$NODE_DIR"/{log,pki,cni/net.d,cni/ipam,kubelet,pod-logs,containerd}
: >"$STATE"
for s in "${SYSCTLS[@]}"; do record "sysctl $s $(sysctl -n "$s")"; done
for p in "${HOST_PATHS[@]}"; do [ -e "$p" ] || record "path $p"; done
# The CRI makes /run/netns with the first pod; down.sh removes it then
# only if it is empty.
[ -e /run/netns ] || record "emptydir /run/netns"
for ns in $(ls /run/netns 2>/dev/null); do record "netns-before $ns"; done

t0=$(date +%s.%N)
say "certificates"
pki=$NODE_DIR/pki
openssl_req() { openssl req -new -nodes -newkey rsa:2048 -keyout "$pki/$1.key" -subj "$2" -out "$pki/$1.csr" 2>/dev/null; }
openssl req -x509 -new -nodes -newkey rsa:2048 -keyout "$pki/ca.key" -subj /CN=redlease-node-ca -days 2 -out "$pki/ca.crt" 2>/dev/null
sign() { # NAME SUBJECT [SANS]
	openssl_req "$1" "$2"
	local ext=$pki/$1.ext
	printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=%s\n' "${3:+serverAuth,}clientAuth" >"$ext"
	[ -z "${3:-}" ] || printf 'subjectAltName=%s\n' "$3" >>"$ext"
	openssl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 2 -extfile "$ext" -out "$pki/$1.crt" 2>/dev/null
}
sign apiserver /CN=kube-apiserver "IP:$BRIDGE_IP,IP:$KUBERNETES_SVC_IP,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
sign admin "/O=system:masters/CN=redlease-node-admin"
sign node "/O=system:nodes/CN=system:node:$NODE_NAME"
sign controller-manager /CN=system:kube-controller-manager
sign scheduler /CN=system:kube-scheduler
sign proxy /CN=system:kube-proxy
openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
server=https://$BRIDGE_IP:$APISERVER_PORT
for who in admin node controller-manager scheduler proxy; do
	cat >"$pki/$who.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: node
  cluster: {server: "$server", certificate-authority: "$pki/ca.crt"}
users:
- name: $who
  user: {client-certificate: "$pki/$who.crt", client-key: "$pki/$who.key"}
contexts:
- name: node
  context: {cluster: node, user: $who}
current-context: node
KC
done

say "bridge $BRIDGE $BRIDGE_IP/24 and the containment rule"
ip link add "$BRIDGE" type bridge
record "bridge $BRIDGE"
ip addr add "$BRIDGE_IP/24" dev "$BRIDGE"
ip link set "$BRIDGE" up
# Nothing a pod sends may leave the bridge's subnet (Service traffic is pod
# traffic after kube-proxy's DNAT); down.sh checks the counter is 0.
reject=(FORWARD -i "$BRIDGE" ! -d "$POD_CIDR" -m comment --comment redlease-node-containment -j REJECT)
iptables -I "${reject[@]}"
record "reject ${reject[*]}"

say "etcd"
start etcd etcd --name node --data-dir "$NODE_DIR/etcd" \
	--listen-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
	--listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
	--initial-cluster "node=http://127.0.0.1:$ETCD_PEER_PORT" --unsafe-no-fsync --log-level warn

say "kube-apiserver"
start kube-apiserver kube-apiserver --etcd-servers "http://127.0.0.1:$ETCD_CLIENT_PORT" \
	--bind-address "$BRIDGE_IP" --advertise-address "$BRIDGE_IP" --secure-port "$APISERVER_PORT" \
	--tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" --client-ca-file "$pki/ca.crt" \
	--kubelet-client-certificate "$pki/admin.crt" --kubelet-client-key "$pki/admin.key" \
	--kubelet-preferred-address-types InternalIP \
	--service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
	--service-account-issuer https://kubernetes.default.svc.cluster.local \
	--service-cluster-ip-range "$SVC_CIDR" --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
	--allow-privileged=true --profiling=false
wait_for kube-apiserver 90 kubectl get --raw /readyz
say "API server ready in $(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)") s"

say "kube-controller-manager, kube-scheduler"
start kube-controller-manager kube-controller-manager --kubeconfig "$pki/controller-manager.kubeconfig" \
	--authentication-kubeconfig "$pki/controller-manager.kubeconfig" --authorization-kubeconfig "$pki/controller-manager.kubeconfig" \
	--bind-address 127.0.0.1 --secure-port "$CONTROLLER_MANAGER_PORT" --leader-elect=false \
	--service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" --use-service-account-credentials \
	--service-cluster-ip-range "$SVC_CIDR" --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key"
start kube-scheduler kube-scheduler --kubeconfig "$pki/scheduler.kubeconfig" \
	--authentication-kubeconfig "$pki/scheduler.kubeconfig" --authorization-kubeconfig "$pki/scheduler.kubeconfig" \
	--bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" --leader-elect=false

say "kube-proxy (iptables), before any pod"
cat >"$NODE_DIR/kube-proxy.yaml" <<CFG
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: "$pki/proxy.kubeconfig"}
hostnameOverride: $NODE_NAME
bindAddress: $BRIDGE_IP
healthzBindAddress: 127.0.0.1:$PROXY_HEALTHZ_PORT
metricsBindAddress: 127.0.0.1:$PROXY_METRICS_PORT
nodePortAddresses: ["$BRIDGE_IP/32"]
clusterCIDR: $POD_CIDR
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
CFG
start kube-proxy kube-proxy --config "$NODE_DIR/kube-proxy.yaml"

say "containerd"
ctd=$NODE_DIR/containerd
cat >"$ctd/config.toml" <<CFG
version = 3
root = "$ctd/root"
state = "$ctd/state"
imports = []
# Version 3: [grpc] and [ttrpc] name the sockets (version 4 moved them into
# the server plugins' sections).
# NRI and /opt are global paths (/var/run/nri, /opt/containerd); the node
# needs neither.
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.internal.v1.opt"]
[grpc]
  address = "$ctd/containerd.sock"
[ttrpc]
  address = "$ctd/containerd.sock.ttrpc"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = "$ctd/certs.d"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "$PAUSE_IMAGE"
[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$NODE_DIR/cni/net.d"
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        SystemdCgroup = false
[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
CFG
cat >"$NODE_DIR/cni/net.d/10-redlease-node.conflist" <<CFG
{
  "cniVersion": "1.0.0",
  "name": "redlease-node",
  "plugins": [
    {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "$NODE_DIR/cni/ipam", "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$BRIDGE_IP"}]],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
CFG
# Pulls: the scenarios' registry over plain HTTP, and every other host
# (_default: ghcr.io of the release's image names) mirrored to it with no
# fallback: a pull never leaves the machine.
for host in "$REGISTRY" _default; do
	mkdir -p "$ctd/certs.d/$host"
	printf 'server = "http://%s"\n[host."http://%s"]\n  capabilities = ["pull", "resolve"]\n' "$REGISTRY" "$REGISTRY" >"$ctd/certs.d/$host/hosts.toml"
done
start containerd containerd --config "$ctd/config.toml"
wait_for containerd 60 ctr --address "$ctd/containerd.sock" version
# The archives images.sh built: the operator, lockctl, the sandbox, Redis.
for a in "$root"/dist/*.tar "$root"/dist/node/*.tar; do
	ctr --address "$ctd/containerd.sock" -n k8s.io images import --all-platforms "$a" >/dev/null
done
say "images: $(ctr --address "$ctd/containerd.sock" -n k8s.io images ls -q | grep -v '^sha256:' | tr '\n' ' ')"

say "kubelet"
# No nameserver: a pod's resolver never reaches the host's.
printf 'search default.svc.cluster.local svc.cluster.local\noptions ndots:1\n' >"$NODE_DIR/resolv.conf"
cat >"$NODE_DIR/kubelet.yaml" <<CFG
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$ctd/containerd.sock
address: $BRIDGE_IP
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: "$pki/ca.crt"}
authorization: {mode: AlwaysAllow}
clusterDNS: []
resolvConf: $NODE_DIR/resolv.conf
podLogsDir: $NODE_DIR/pod-logs
failSwapOn: false
evictionHard: {nodefs.available: "1%", imagefs.available: "1%", memory.available: "100Mi"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
CFG
start kubelet kubelet --config "$NODE_DIR/kubelet.yaml" --kubeconfig "$pki/node.kubeconfig" \
	--root-dir "$NODE_DIR/kubelet" --cert-dir "$NODE_DIR/kubelet/pki" --node-ip "$BRIDGE_IP" --hostname-override "$NODE_NAME"
wait_for kubelet 120 kubectl wait --for=condition=Ready "node/$NODE_NAME" --timeout=1s
# kube-proxy waits for its Node (the kubelet registers it), then writes
# the Service rules: the kubernetes Service's before any pod runs.
wait_for kube-proxy 90 sh -c "iptables -t nat -S KUBE-SERVICES | grep -q default/kubernetes"
# The service-account token controller and kube-root-ca.crt must exist
# before pods mount them.
wait_for kube-controller-manager 60 kubectl get -n default serviceaccount/default configmap/kube-root-ca.crt
say "node Ready: cluster up in $(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)") s"
