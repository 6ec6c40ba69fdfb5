#!/usr/bin/env bash
# Builds the pinned tools into bin/, skipping any whose stamp matches the
# current pins. The stamp is a hash of this script and the go.mod/go.sum that
# pin the tool, so a restored bin/ cache stays valid across fresh clones
# (file mtimes would not).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin="$root/bin"
mkdir -p "$bin/.stamps"

k8s_version=v1.37.2
k8s_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${k8s_version} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/client-go/pkg/version.gitVersion=${k8s_version}"

# name|module dir|package|ldflags
tools=(
  "etcd|etcd|go.etcd.io/etcd/server/v3|-s -w"
  "kube-apiserver|.|k8s.io/kubernetes/cmd/kube-apiserver|$k8s_ldflags"
  "kube-controller-manager|.|k8s.io/kubernetes/cmd/kube-controller-manager|$k8s_ldflags"
  "kube-scheduler|.|k8s.io/kubernetes/cmd/kube-scheduler|$k8s_ldflags"
  "kubectl|.|k8s.io/kubernetes/cmd/kubectl|$k8s_ldflags"
  "kwok|.|sigs.k8s.io/kwok/cmd/kwok|-s -w"
  "controller-gen|.|sigs.k8s.io/controller-tools/cmd/controller-gen|-s -w"
  "helm|.|helm.sh/helm/v3/cmd/helm|-s -w"
)

want=("$@")
for entry in "${tools[@]}"; do
  IFS='|' read -r name dir pkg ldflags <<<"$entry"
  if [ ${#want[@]} -gt 0 ] && [[ ! " ${want[*]} " =~ " $name " ]]; then continue; fi
  stamp=$(cat "$here/build.sh" "$here/$dir/go.mod" "$here/$dir/go.sum" | sha256sum | cut -c1-16)
  if [ -x "$bin/$name" ] && [ "$(cat "$bin/.stamps/$name" 2>/dev/null)" = "$stamp" ]; then
    continue
  fi
  echo "building $name ($pkg)"
  start=$(date +%s)
  (cd "$here/$dir" && CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$bin/$name" "$pkg")
  echo "$stamp" >"$bin/.stamps/$name"
  echo "built $name in $(( $(date +%s) - start ))s"
done
