#!/usr/bin/env bash
# Writes the API reference from api/ with crd-ref-docs (bin/, built by
# hack/tools/crd-ref-docs): docs/api.md for v1 and docs/api-v1alpha1.md for
# the frozen v1alpha1, one page per version so their types' anchors do not
# collide. make generate runs it; make verify-generated fails when stale.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
for v in v1 v1alpha1; do
  out=docs/api.md
  [ "$v" = v1 ] || out=docs/api-$v.md
  bin/crd-ref-docs --source-path=./api/$v --config=hack/api-docs/config.yaml --renderer=markdown \
    --templates-dir=hack/api-docs/templates/markdown --output-path="$out" --log-level=ERROR
  # One blank line at most, none at the end: the templates' layout without
  # their whitespace.
  cat -s "$out" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' >"$out.tmp" && mv "$out.tmp" "$out"
done
echo "wrote docs/api.md and docs/api-v1alpha1.md"
