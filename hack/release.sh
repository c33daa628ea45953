#!/usr/bin/env bash
# Writes a release into $DIST (make release VERSION=vX.Y.Z; nothing in it is
# committed):
#   manager-$V.tar, lockctl-$V.tar   multi-platform OCI image archives
#   *.tar.digest                     their image index digests
#   lockctl-$V-OS-ARCH               lockctl binaries
#   kubectl-redlease-$V-OS-ARCH.tar.gz  lockctl as the kubectl plugin
#   redlease.yaml                    its krew manifest
#   redlease-${V#v}.tgz              the chart, version/appVersion $V, both
#                                    images pinned by digest
#   install.yaml                     Namespace, CRDs, RBAC, Deployment: the
#                                    chart's defaults, for kubectl apply -f
#   samples-$V.tar.gz                config/samples, their images under
#                                    $REGISTRY
#   crds.yaml                        the CRDs alone
#   argocd-health.yaml               the argocd-cm patch with the Argo CD
#                                    health checks (docs/argocd.md)
#   *.cdx.json                       a CycloneDX SBOM per binary and image
#   SHA256SUMS                       of every file above
# test/release checks the result (on one platform, for speed).
#
# Every image is $REGISTRY/redlease/{manager,lockctl} (default ghcr.io): the
# archives' names, the chart's image.registry and lockctl.image.registry
# (and so install.yaml), and the samples' images all take it, so that a
# mirror is one setting (make release REGISTRY=mirror.example:5000).
#
# Environment (the Makefile sets it): VERSION REVISION GO_LDFLAGS DIST
# REGISTRY IMAGE_PLATFORMS LOCKCTL_PLATFORMS IMAGE_CA HELM.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
: "${VERSION:?}" "${GO_LDFLAGS:?}" "${DIST:?}" "${REGISTRY:?}" "${IMAGE_PLATFORMS:?}" "${LOCKCTL_PLATFORMS:?}" "${IMAGE_CA:?}" "${HELM:?}"
case $REGISTRY in
*[!a-zA-Z0-9.:/_-]* | */ | /* | *//*) echo "release: REGISTRY=$REGISTRY: want host[:port][/path]" >&2; exit 2 ;;
esac
case $VERSION in
v[0-9]*.[0-9]*.[0-9]*) ;;
*) echo "release: VERSION=$VERSION: want vMAJOR.MINOR.PATCH[-PRE]" >&2; exit 2 ;;
esac
say() { printf '[release] %s\n' "$*" >&2; }

dist=$(mkdir -p "$DIST" && cd "$DIST" && pwd)
# Emptied first: only dist/ itself, or a directory holding a release.
if [ "$dist" != "$root/dist" ] && [ -n "$(ls -A "$dist")" ] && [ ! -f "$dist/SHA256SUMS" ]; then
	echo "release: DIST=$DIST is not empty and holds no release: refusing to empty it" >&2
	exit 2
fi
rm -rf "${dist:?}"/*
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# gobuild OS/ARCH CMD OUT: a static, trimmed, version-stamped binary.
gobuild() {
	say "go build $2 ($1)"
	(cd "$root" && CGO_ENABLED=0 GOOS=${1%/*} GOARCH=${1#*/} go build -trimpath -ldflags "$GO_LDFLAGS" -o "$3" "./cmd/$2")
}
ocibuild=$work/ocibuild gosbom=$work/gosbom
(cd "$root/hack/ocibuild" && go build -o "$ocibuild" . && go build -o "$gosbom" ./cmd/gosbom)

# Images: one binary per platform, one archive with every platform.
for c in manager lockctl; do
	plats=()
	for p in $IMAGE_PLATFORMS; do
		out=$work/${p/\//-}/$c
		gobuild "$p" "$c" "$out"
		plats+=(-platform "$p=$out")
	done
	"$ocibuild" "${plats[@]}" -ca "$IMAGE_CA" -tag "$REGISTRY/redlease/$c:$VERSION" -revision "${REVISION:-}" \
		-out "$dist/$c-$VERSION.tar" -digest-file "$dist/$c-$VERSION.tar.digest" -sbom "$dist/$c-$VERSION.tar.cdx.json"
done

# lockctl binaries, each with its SBOM.
for p in $LOCKCTL_PLATFORMS; do
	out=$dist/lockctl-$VERSION-${p/\//-}
	if [ -x "$work/${p/\//-}/lockctl" ]; then cp "$work/${p/\//-}/lockctl" "$out"; else gobuild "$p" lockctl "$out"; fi
	"$gosbom" -version "$VERSION" -out "$out.cdx.json" "$out"
done

# The kubectl plugin: lockctl as kubectl-redlease (it names itself so
# when run by that name), in an archive per platform as krew installs it,
# and krew's manifest (plugins/redlease.yaml) filled for them.
krew=$dist/redlease.yaml
sed -e '/^#/d' -e "s|KREW_VERSION|$VERSION|" -e '/^  platforms:$/q' "$root/plugins/redlease.yaml" >"$krew"
for p in $LOCKCTL_PLATFORMS; do
	archive=kubectl-redlease-$VERSION-${p/\//-}.tar.gz
	mkdir -p "$work/plugin/$p" && cp "$dist/lockctl-$VERSION-${p/\//-}" "$work/plugin/$p/kubectl-redlease" && cp "$root/LICENSE" "$work/plugin/$p/"
	tar -C "$work/plugin/$p" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - kubectl-redlease LICENSE | gzip -n >"$dist/$archive"
	sum=$(sha256sum "$dist/$archive" | cut -d' ' -f1)
	sed -n '/^  platforms:$/,$p' "$root/plugins/redlease.yaml" | tail -n +2 | sed -e "s|KREW_OS|${p%/*}|" -e "s|KREW_ARCH|${p#*/}|" \
		-e "s|KREW_URI|https://github.com/redlease/redlease/releases/download/$VERSION/$archive|" -e "s|KREW_SHA256|$sum|" >>"$krew"
done
if grep -q KREW_ "$krew"; then
	echo "release: plugins/redlease.yaml has a placeholder this script does not fill" >&2
	exit 1
fi

# The chart: versioned as the release, both images under $REGISTRY, pinned
# by digest.
chart=$work/chart/redlease
mkdir -p "$work/chart" && cp -r "$root/charts/redlease" "$chart"
manager_digest=$(cat "$dist/manager-$VERSION.tar.digest")
lockctl_digest=$(cat "$dist/lockctl-$VERSION.tar.digest")
sed -i -e "/^image:/,/^[a-z]/ s|^  digest: \"\"|  digest: \"$manager_digest\"|" \
	-e "/^lockctl:/,/^[a-z]/ s|^    digest: \"\"|    digest: \"$lockctl_digest\"|" \
	-e "/^image:/,/^[a-z]/ s|^  registry: .*|  registry: $REGISTRY|" \
	-e "/^lockctl:/,/^[a-z]/ s|^    registry: .*|    registry: $REGISTRY|" "$chart/values.yaml"
if [ "$(grep -c "digest: \"sha256:" "$chart/values.yaml")" != 2 ] || [ "$(grep -c "^ *registry: $REGISTRY\$" "$chart/values.yaml")" != 2 ]; then
	echo "release: could not pin both digests and stamp both registries in the chart's values.yaml" >&2
	exit 1
fi
# Artifact Hub's list of the images names the same ones.
sed -i -e "s|^      image: ghcr.io/redlease/manager:.*|      image: $REGISTRY/redlease/manager:$VERSION@$manager_digest|" \
	-e "s|^      image: ghcr.io/redlease/lockctl:.*|      image: $REGISTRY/redlease/lockctl:$VERSION@$lockctl_digest|" "$chart/Chart.yaml"
if [ "$(grep -c "^      image: $REGISTRY/redlease/[a-z]*:$VERSION@sha256:" "$chart/Chart.yaml")" != 2 ]; then
	echo "release: could not stamp both images in the chart's artifacthub.io/images" >&2
	exit 1
fi
"$HELM" package "$chart" --version "${VERSION#v}" --app-version "$VERSION" --destination "$dist" >/dev/null
say "chart redlease-${VERSION#v}.tgz"

# install.yaml: the packaged chart's defaults (no helm test hook), after
# the namespace they go in; crds.yaml: the CRDs alone.
{
	printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: redlease-system\n  labels:\n    pod-security.kubernetes.io/enforce: restricted\n'
	"$HELM" template redlease "$dist/redlease-${VERSION#v}.tgz" --namespace redlease-system --skip-tests
} >"$dist/install.yaml"
# The samples, their images under $REGISTRY: the repository's name them
# under ghcr.io (TestShippedManifestsNameTheirRegistry), rewritten here.
mkdir -p "$work/samples" && cp -r "$root/config/samples" "$work/samples/"
grep -rlZ 'ghcr.io/redlease/' "$work/samples" | xargs -0 -r sed -i "s|ghcr.io/redlease/|$REGISTRY/redlease/|g"
tar -C "$work/samples" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -czf "$dist/samples-$VERSION.tar.gz" samples
for f in "$root"/config/crd/bases/*.yaml; do
	printf -- '---\n'
	cat "$f"
done >"$dist/crds.yaml"
# The Argo CD health checks, as docs/argocd.md shows them (TestArgoCDSnippets).
"$root/hack/argocd-cm.sh" >"$dist/argocd-health.yaml"

(cd "$dist" && sha256sum -- * >SHA256SUMS)
say "wrote $dist:"
(cd "$dist" && ls -l) >&2
