#!/usr/bin/env bash
# Runs joinery on kind, for users who have Docker: a kind cluster, kwok (deployed from its
# released manifests, managing nodes annotated kwok.x-k8s.io/node=fake), joinery's CRDs and
# joinery itself from manifests/deploy, with images built from this checkout.
#
# NOTE: this cannot run on joinery's CI machine or any machine without a Docker engine; there,
# use the local cluster (`make cluster`, `make run`), which runs the same components as
# processes. Needs: docker, kind, kubectl.
#
# usage: hack/kind/up.sh     then: KUBECONFIG=.local/kind.kubeconfig make e2e
#        hack/kind/down.sh   deletes the cluster
set -euo pipefail
cd "$(dirname "$0")/../.."

cluster=${KIND_CLUSTER_NAME:-joinery}
kwok_version=$(go -C hack/tools/kwok list -m -f '{{.Version}}' sigs.k8s.io/kwok)

for tool in docker kind kubectl; do
  command -v "$tool" >/dev/null || { echo "hack/kind/up.sh needs $tool" >&2; exit 1; }
done

echo "==> kind cluster $cluster"
kind get clusters | grep -qx "$cluster" || kind create cluster --name "$cluster" --config hack/kind/cluster.yaml
mkdir -p .local
kind get kubeconfig --name "$cluster" > .local/kind.kubeconfig
export KUBECONFIG=$PWD/.local/kind.kubeconfig

echo "==> kwok $kwok_version with joinery's stages (the ones the local cluster uses)"
kubectl apply -f "https://github.com/kubernetes-sigs/kwok/releases/download/$kwok_version/kwok.yaml"
kubectl -n kube-system rollout status deployment/kwok-controller --timeout=120s
server_version=$(kubectl version -o json | sed -n 's/.*"gitVersion": "\(v[^"]*\)".*/\1/p' | tail -1)
sed "s/KUBE_VERSION/\"$server_version\"/" internal/localcluster/kwok-stages.yaml | kubectl apply -f -

echo "==> joinery images"
for target in scheduler controller; do
  docker build -f hack/kind/Dockerfile --target "$target" -t "joinery-$target:dev" .
  kind load docker-image --name "$cluster" "joinery-$target:dev"
done

echo "==> joinery CRDs and deployment"
kubectl apply --server-side -f manifests/crds
kubectl apply --server-side -k manifests/deploy
kubectl -n joinery rollout status deployment/joinery-scheduler --timeout=180s
kubectl -n joinery rollout status deployment/joinery-controller --timeout=180s
echo "joinery runs on kind-$cluster; pods opt in with schedulerName: joinery"
