#!/usr/bin/env bash
# Prints the unit and integration packages: every package but the e2e suites (they run bin/'s
# binaries in processes of their own, which the race detector cannot see) and hack/tools/ (the
# tools' main packages, without tests). make test runs them under -race and hack/vet.sh vets
# them under -race, so the two share one compile of the dependency graph.
set -euo pipefail
cd "$(dirname "$0")/.."
go list ./... | grep -v -e /e2e/ -e /hack/tools/
