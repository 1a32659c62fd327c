#!/usr/bin/env bash
# go vet over every package: run by make verify, and by make test before the tests, which run
# with -vet=off.
#
# Why one vet, shared: go vet analyses each dependency too (the facts its checks carry across
# packages, such as printf wrappers: a type-check of every dependency from source, about 2,000
# packages here), and it caches that per set of checks and build flags. go test's own vet uses
# a smaller set of checks, so it redid all of it, once for the race build and once for the
# e2e suites' plain build, minutes of a cold CI run. Here the unit, integration and e2e
# packages are vetted once, under -race, the build the unit and integration tests use (the e2e
# suites add only their own packages to that graph); the tools' main packages are vetted as
# they are built, without it (under -race they would compile etcd's server a second time for
# nothing). A second run of this script is a cache hit.
set -euo pipefail
cd "$(dirname "$0")/.."
go=${GO:-go}

packages=$($go list ./...)
# shellcheck disable=SC2046 # package lists are word lists
$go vet -race $(grep -v /hack/tools/ <<<"$packages")
# shellcheck disable=SC2046
$go vet $(grep /hack/tools/ <<<"$packages")
