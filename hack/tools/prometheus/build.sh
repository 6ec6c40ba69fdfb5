#!/usr/bin/env bash
# Builds the Prometheus server and promtool into bin/ from this module's pin,
# in one `go build` of the two commands, skipping it when the stamp matches.
# It is not an entry of ../build.sh: that script's stamps hash the script
# itself, so adding a line there would relink every tool.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$here/../../.." && pwd)/bin
mkdir -p "$bin/.stamps"
stamp=$(cat "$here/build.sh" "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-16)
if [ -x "$bin/prometheus" ] && [ -x "$bin/promtool" ] && [ "$(cat "$bin/.stamps/prometheus" 2>/dev/null)" = "$stamp" ]; then
  exit 0
fi
echo "building prometheus and promtool (github.com/prometheus/prometheus)"
start=$(date +%s)
# remove_all_sd is Prometheus' own build tag for a server without the cloud
# service discoveries (static, file and HTTP remain): the tests scrape one
# static target, and the build takes half the time.
(cd "$here" && CGO_ENABLED=0 go build -tags remove_all_sd -trimpath -ldflags="-s -w" -o "$bin/" \
  github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool)
echo "$stamp" >"$bin/.stamps/prometheus"
echo "built prometheus and promtool in $(( $(date +%s) - start ))s"
