#!/usr/bin/env bash
# Deletes the kind cluster hack/kind/up.sh created (needs Docker; cannot run on CI).
set -euo pipefail
kind delete cluster --name "${KIND_CLUSTER_NAME:-joinery}"
