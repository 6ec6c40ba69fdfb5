#!/usr/bin/env bash
# Keeps the Helm chart in step with what controller-gen generates:
#   config/crd/bases/*.yaml  -> charts/datapilot/crds/
#   config/rbac/role.yaml    -> charts/datapilot/files/role.yaml (the chart's
#                               ClusterRole renders its rules from this copy)
# The copies are byte-for-byte. With --check nothing is written; the script
# fails, listing the differences, when the chart is out of date.
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

stale=0
for p in "${pairs[@]}"; do
  src="$root/${p%%|*}" dst="$root/${p##*|}"
  if cmp -s "$src" "$dst"; then continue; fi
  if $check; then
    echo "${p##*|} differs from ${p%%|*}" >&2
    stale=1
  else
    mkdir -p "$(dirname "$dst")"
    cp "$src" "$dst"
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
