#!/usr/bin/env bash
# Publishes a release that make release wrote into $DIST to an OCI registry
# and signs it with cosign (make publish; nothing in $DIST changes):
#   $REGISTRY/redlease/manager:$VERSION   the image index of manager-$V.tar
#   $REGISTRY/redlease/lockctl:$VERSION   the image index of lockctl-$V.tar
#   oci://$REGISTRY/redlease/charts/redlease:${V#v}   the chart (helm push)
# and prints each as REF@DIGEST on stdout, one a line.
#
# Signing, by the digest pushed (never by tag), each artifact once:
#   COSIGN_KEY=cosign.key   cosign sign --key (password from
#                           COSIGN_PASSWORD), without a transparency log
#                           entry (--tlog-upload=false): it works offline and
#                           the verifier needs only cosign.pub.
#   COSIGN_KEYLESS=1        cosign sign with the ambient OIDC identity (the
#                           release workflow's, id-token: write): a Fulcio
#                           certificate naming the workflow, and a Rekor entry.
#   neither                 pushed unsigned, with a warning.
# cosign stores a signature as the tag sha256-<digest>.sig of the artifact's
# repository (cosign's own format; nothing here is a format of ours).
#
# Environment (the Makefile sets it): VERSION DIST REGISTRY HELM COSIGN
# [COSIGN_KEY | COSIGN_KEYLESS] [PLAIN_HTTP=1: a registry without TLS,
# e.g. make test-node's]. Credentials: docker's config (docker login), which
# helm and cosign read too.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
: "${VERSION:?}" "${DIST:?}" "${REGISTRY:?}" "${HELM:?}" "${COSIGN:?}"
COSIGN_KEY=${COSIGN_KEY:-} COSIGN_KEYLESS=${COSIGN_KEYLESS:-} PLAIN_HTTP=${PLAIN_HTTP:-}
say() { printf '[publish] %s\n' "$*" >&2; }

if [ -n "$COSIGN_KEY" ] && [ -n "$COSIGN_KEYLESS" ]; then
	echo "publish: COSIGN_KEY and COSIGN_KEYLESS: choose one" >&2
	exit 2
fi
chart=$DIST/redlease-${VERSION#v}.tgz
for f in "$DIST/manager-$VERSION.tar" "$DIST/lockctl-$VERSION.tar" "$chart"; do
	[ -f "$f" ] || { echo "publish: $f missing: make release VERSION=$VERSION DIST=$DIST first" >&2; exit 2; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
registry=$work/registry
(cd "$root/hack/ocibuild" && go build -o "$registry" ./cmd/registry)

helm_flags=() cosign_flags=(--yes)
if [ -n "$PLAIN_HTTP" ]; then
	helm_flags+=(--plain-http)
	cosign_flags+=(--allow-http-registry --allow-insecure-registry)
fi
if [ -n "$COSIGN_KEY" ]; then
	cosign_flags+=(--key "$COSIGN_KEY" --tlog-upload=false)
fi

# sign REF@DIGEST, as the environment says.
sign() {
	if [ -z "$COSIGN_KEY$COSIGN_KEYLESS" ]; then
		say "WARNING: $1 not signed (neither COSIGN_KEY nor COSIGN_KEYLESS)"
		return
	fi
	say "cosign sign $1"
	"$COSIGN" sign "${cosign_flags[@]}" "$1" >&2
}

refs=()
for c in manager lockctl; do
	repo=$REGISTRY/redlease/$c
	digest=$("$registry" push -archive "$DIST/$c-$VERSION.tar" -to "$repo:$VERSION")
	want=$(cat "$DIST/$c-$VERSION.tar.digest")
	if [ "$digest" != "$want" ]; then
		echo "publish: $repo:$VERSION pushed as $digest, the release's digest is $want" >&2
		exit 1
	fi
	say "pushed $repo:$VERSION@$digest"
	refs+=("$repo@$digest")
done

out=$("$HELM" push "$chart" "oci://$REGISTRY/redlease/charts" "${helm_flags[@]}" 2>&1)
digest=$(sed -n 's/^Digest: *//p' <<<"$out")
case $digest in
sha256:*) ;;
*) echo "publish: helm push named no digest:" >&2; echo "$out" >&2; exit 1 ;;
esac
say "pushed oci://$REGISTRY/redlease/charts/redlease:${VERSION#v}@$digest"
refs+=("$REGISTRY/redlease/charts/redlease@$digest")

for r in "${refs[@]}"; do
	sign "$r"
	echo "$r"
done
