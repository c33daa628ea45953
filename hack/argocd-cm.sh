#!/usr/bin/env bash
# Prints the argocd-cm patch that installs redlease's Argo CD health checks:
# one resource.customizations.health key per docs/argocd/redlease.io_*.lua.
# hack/release.sh ships it as dist/argocd-health.yaml, and docs/argocd.md
# shows it; test/docs (TestArgoCDSnippets) fails when the three differ, so
# the Lua files are the one source.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cat <<'HEAD'
# redlease's Argo CD health checks (docs/argocd.md). Merge into argocd-cm:
#   kubectl -n argocd patch configmap argocd-cm --patch-file argocd-health.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-cm
data:
HEAD
# LC_ALL=C: the glob's order, so the output, is the same on every machine.
export LC_ALL=C
for f in "$root"/docs/argocd/redlease.io_*.lua; do
	printf '  resource.customizations.health.%s: |\n' "$(basename "$f" .lua)"
	# Blank lines stay empty: no trailing blanks for linters to flag.
	sed -e '/^$/!s/^/    /' "$f"
done
