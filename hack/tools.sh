#!/usr/bin/env bash
# Builds the components joinery's tests and local cluster run (etcd, kube-apiserver,
# kube-controller-manager, kwok) from Go modules pinned in this repository, into an ignored
# folder. A binary is rebuilt only when the go.mod/go.sum it is built from changed; the Go build
# cache keeps rebuilds incremental, so never clean it.
#
# usage: hack/tools.sh [component ...]   (default: etcd kube-apiserver)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${JOINERY_TOOLS_DIR:-$root/.local/bin}
mkdir -p "$out"

kube_version=$(go -C "$root" list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=$(echo "$kube_version" | cut -d. -f2)
build_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)

# Kubernetes components report this version to clients and use it for compatibility checks;
# without it they say v0.0.0-master.
kube_ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ldflags+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  kube_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date"
done

# component -> "module-dir package ldflags"
declare -A modules=(
  [etcd]=.
  [kube-apiserver]=.
  [kube-controller-manager]=.
  [kube-scheduler]=.
  [kwok]=hack/tools/kwok
)
declare -A packages=(
  [etcd]=./hack/tools/etcd
  [kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
  [kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
  [kube-scheduler]=k8s.io/kubernetes/cmd/kube-scheduler
  [kwok]=sigs.k8s.io/kwok/cmd/kwok
)

components=("$@")
[ ${#components[@]} -gt 0 ] || components=(etcd kube-apiserver)

for c in "${components[@]}"; do
  pkg=${packages[$c]:-}
  if [ -z "$pkg" ]; then
    echo "hack/tools.sh: unknown component $c (known: ${!packages[*]})" >&2
    exit 2
  fi
  moddir="$root/${modules[$c]}"
  ldflags=$kube_ldflags
  if [ "$c" = kwok ]; then
    kwok_version=$(go -C "$moddir" list -m -f '{{.Version}}' sigs.k8s.io/kwok)
    ldflags="-X sigs.k8s.io/kwok/pkg/consts.Version=${kwok_version#v} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${kube_version#v}"
  fi
  stamp=$(cat "$moddir/go.mod" "$moddir/go.sum" | sha256sum | cut -c1-16)
  if [ -x "$out/$c" ] && [ "$(cat "$out/.$c.stamp" 2>/dev/null)" = "$stamp" ]; then
    continue
  fi
  echo "building $c ($pkg) into $out; a first build from a cold Go cache takes several minutes on 2 cores" >&2
  start=$(date +%s)
  # -s -w: the tools are the tests' fixtures, never debugged; without a symbol table and DWARF
  # the four large links take a fraction of the time.
  go -C "$moddir" build -trimpath -ldflags "-s -w $ldflags" -o "$out/$c" "$pkg"
  echo "$stamp" > "$out/.$c.stamp"
  echo "built $c in $(( $(date +%s) - start ))s" >&2
done
