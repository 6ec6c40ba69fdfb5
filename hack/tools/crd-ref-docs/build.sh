#!/usr/bin/env bash
# Builds crd-ref-docs into bin/ from this module's pin, skipping it when its
# stamp matches. It is not an entry of ../build.sh: that script's stamps hash
# the script itself, so adding a line there would relink every tool.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$here/../../.." && pwd)/bin
mkdir -p "$bin/.stamps"
stamp=$(cat "$here/build.sh" "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-16)
if [ -x "$bin/crd-ref-docs" ] && [ "$(cat "$bin/.stamps/crd-ref-docs" 2>/dev/null)" = "$stamp" ]; then
  exit 0
fi
echo "building crd-ref-docs (github.com/elastic/crd-ref-docs)"
(cd "$here" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$bin/crd-ref-docs" github.com/elastic/crd-ref-docs)
echo "$stamp" >"$bin/.stamps/crd-ref-docs"
