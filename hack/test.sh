#!/usr/bin/env bash
# make test: the unit and integration packages under the race detector and the e2e suites, at
# the same time, so the e2e suites' waits on their clusters overlap the race phase (on a cold
# cache: 21.3 minutes together against 22.4 one after the other; docs/benchmarks.md).
# The e2e suites' output goes to a file, printed once the unit packages are done, so the two
# never interleave. Exits non-zero when either fails.
#
# go vet runs first, once for both (hack/vet.sh; after make verify, a cache hit), and the tests
# with -vet=off: go test's own vet would analyse every dependency again, twice.
#
# Environment (the Makefile sets it): GO, TEST_LDFLAGS, TEST_FLAGS, E2E_PARALLEL, E2E_PACKAGES.
set -uo pipefail
cd "$(dirname "$0")/.."
go=${GO:-go}

GO="$go" hack/vet.sh || { echo "make test failed: go vet found problems" >&2; exit 1; }

e2e_log=$(mktemp)
trap 'rm -f "$e2e_log"' EXIT
# shellcheck disable=SC2086 # the flag and package lists are word lists
$go test -count=1 -vet=off -p "${E2E_PARALLEL:-3}" ${TEST_LDFLAGS:-} ${TEST_FLAGS:-} ${E2E_PACKAGES:-./e2e/...} >"$e2e_log" 2>&1 &
e2e=$!
echo "e2e suites started in the background (pid $e2e); their output follows the unit packages'"

# shellcheck disable=SC2046,SC2086
$go test -race -vet=off ${TEST_LDFLAGS:-} ${TEST_FLAGS:-} $(hack/unit-packages.sh)
unit_status=$?

echo "--- e2e suites"
e2e_status=0
wait "$e2e" || e2e_status=$?
cat "$e2e_log"

if [ "$unit_status" != 0 ] || [ "$e2e_status" != 0 ]; then
	echo "make test failed: unit and integration exit $unit_status, e2e exit $e2e_status" >&2
	exit 1
fi
