#!/usr/bin/env bash
# Keeps the Helm chart in step with what controller-gen generates:
#   config/crd/bases/*.yaml  -> charts/datapilot/crds/
#   config/rbac/role.yaml    -> charts/datapilot/files/role.yaml (the chart's
#                               ClusterRole renders its rules from this copy)
# The copies are byte-for-byte, except that the FlinkCluster CRD gets the
# conversion webhook stanza of config/crd/patches/conversion.yaml (the lines
# under its `spec:`) inserted under its own `spec:`, as kustomize patches it
# in for config/ (helm cannot template crds/, and controller-gen does not
# write the stanza). With --check nothing is written; the script fails,
# listing the differences, when the chart is out of date.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
chart="$root/charts/datapilot"

check=false
case "${1:-}" in
  "") ;;
  --check) check=true ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

# pairs of source|destination; destinations under crds/ are the whole set.
pairs=("config/rbac/role.yaml|charts/datapilot/files/role.yaml")
for f in "$root"/config/crd/bases/*.yaml; do
  pairs+=("config/crd/bases/$(basename "$f")|charts/datapilot/crds/$(basename "$f")")
done

# render prints what the chart's copy of a source file must hold.
conversion_patch="$root/config/crd/patches/conversion.yaml"
render() {
  if [ "$1" = "config/crd/bases/data.example.com_flinkclusters.yaml" ]; then
    local stanza
    stanza=$(sed -n '/^spec:$/,$p' "$conversion_patch" | tail -n +2)
    [ -n "$stanza" ] || { echo "no spec: stanza in $conversion_patch" >&2; exit 1; }
    STANZA="$stanza" awk '{ print } /^spec:$/ && !done { print ENVIRON["STANZA"]; done = 1 }' "$root/$1"
  else
    cat "$root/$1"
  fi
}

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
stale=0
for p in "${pairs[@]}"; do
  dst="$root/${p##*|}"
  render "${p%%|*}" >"$tmp"
  if cmp -s "$tmp" "$dst"; then continue; fi
  if $check; then
    echo "${p##*|} differs from ${p%%|*}" >&2
    stale=1
  else
    mkdir -p "$(dirname "$dst")"
    cp "$tmp" "$dst"
    echo "synced ${p##*|}"
  fi
done

# A CRD removed from config/crd/bases must leave the chart too.
for f in "$chart"/crds/*.yaml; do
  [ -e "$f" ] || continue
  if [ ! -e "$root/config/crd/bases/$(basename "$f")" ]; then
    if $check; then
      echo "charts/datapilot/crds/$(basename "$f") has no source in config/crd/bases" >&2
      stale=1
    else
      rm "$f"
      echo "removed charts/datapilot/crds/$(basename "$f")"
    fi
  fi
done

if [ "$stale" -ne 0 ]; then
  echo "The chart is out of date: run 'hack/sync-chart.sh' (make generate does it) and commit the result." >&2
  exit 1
fi
