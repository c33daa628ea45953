#!/usr/bin/env bash
# Builds the OCI archives make test-node imports, into dist/ (this host's
# platform only): the operator and lockctl (make image), the pod sandbox
# (test/node/pause), the demo (its fenced ledger writer), and Redis assembled from Debian's redis-server and the
# shared libraries it links, with hack/ocibuild. Warm: a few seconds.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$root"

arch=$(go env GOARCH)
mkdir -p dist/node
make -s image IMAGE_PLATFORMS="linux/$arch" >/dev/null
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o dist/bin/node/pause ./test/node/pause
(cd hack/ocibuild && go run . -platform "linux/$arch=$root/dist/bin/node/pause" -tag "$PAUSE_IMAGE" -out "$root/dist/node/pause.tar") >/dev/null
# The demo's fenced ledger writer (demo write-once): the critical section of
# the CronJob scenario.
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o dist/bin/node/demo ./cmd/demo
(cd hack/ocibuild && go run . -platform "linux/$arch=$root/dist/bin/node/demo" -tag "$DEMO_IMAGE" -out "$root/dist/node/demo.tar") >/dev/null

# redis-server is also the Sentinel (--sentinel); ldd names every library
# it loads, the dynamic loader included. Debian's /bin/sh (dash, which
# needs only libc) starts it: a Sentinel's config file must exist and be
# writable (an emptyDir), and a replica names its master from the
# environment, as the official image's entrypoint does.
# Not the symlink's target (redis-check-rdb): the binary acts by the name it
# is started as, /redis-server in the image.
server=$(command -v redis-server)
libs=()
for l in $(ldd "$server" | grep -o '/[^ ]*'); do libs+=(-file "$(readlink -f "$l")=$l"); done
libs+=(-file "$(readlink -f /bin/sh)=/bin/sh")
version=$(redis-server --version | sed -n 's/.* v=\([0-9.]*\).*/\1/p')
(cd hack/ocibuild && go run . -platform "linux/$arch=$server" "${libs[@]}" -tag "$REDIS_IMAGE:$version" -out "$root/dist/node/redis.tar") >/dev/null
echo "$REDIS_IMAGE:$version" >"$root/dist/node/redis.tag"

# The lock agent's examples in pods of their own language (scenario 8a),
# assembled like Redis from this host's programs and the libraries they
# load: Debian's python3.11 with its standard library (PYTHONHOME=/usr in
# the pod), and Node.js with the Node example and its npm dependencies.
# with_libs FILE... adds -file pairs for FILEs' shared libraries to files.
with_libs() {
	local l
	# ldd of several files heads each list with "FILE:": only its => targets
	# and the loader's own line are libraries.
	for l in $(ldd "$@" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// && $2 ~ /^\(/ {print $1}' | sort -u); do files+=(-file "$(readlink -f "$l")=$l"); done
}
python=$(readlink -f /usr/bin/python3.11) # Debian's, whose standard library is under /usr/lib
files=()
with_libs "$python" /usr/lib/python3.11/lib-dynload/*.so
while read -r f; do files+=(-file "$f=$f"); done < <(find /usr/lib/python3.11 -type f \( -name '*.py' -o -name '*.so' \) \
	-not -path '*/__pycache__/*' -not -path '*/test/*' -not -path '*/tests/*' -not -path '*/idlelib/*' -not -path '*/tkinter/*' \
	-not -path '*/ensurepip/*' -not -path '*/lib2to3/*' -not -path '*/turtledemo/*' -not -path '*/dist-packages/*' -not -path '*/site-packages/*')
files+=(-file "$root/examples/agent/python/ledger.py=/app/ledger.py")
(cd hack/ocibuild && go run . -platform "linux/$arch=$python" "${files[@]}" -tag "$PYTHON_IMAGE" -out "$root/dist/node/python-ledger.tar") >/dev/null

node=$(readlink -f "$(command -v node)")
app=$(mktemp -d)
cp -r "$root/examples/agent/node/." "$app/"
rm -rf "$app/node_modules"
(cd "$app" && npm ci --prefer-offline --no-audit --no-fund --omit=dev >/dev/null)
files=()
with_libs "$node"
while read -r f; do files+=(-file "$f=/app/${f#"$app"/}"); done < <(find "$app" -type f)
(cd hack/ocibuild && go run . -platform "linux/$arch=$node" "${files[@]}" -tag "$NODEJS_IMAGE" -out "$root/dist/node/node-ledger.tar") >/dev/null
rm -rf "$app"

# A release as users get it (make release, this platform only) and the OCI
# registry the scenarios serve it from (hack/ocibuild/cmd/registry).
make -s release DIST=dist/node/release IMAGE_PLATFORMS="linux/$arch" LOCKCTL_PLATFORMS="linux/$arch" 2>/dev/null
(cd hack/ocibuild && go build -o "$root/dist/bin/node/registry" ./cmd/registry)
