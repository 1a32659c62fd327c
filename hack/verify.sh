#!/usr/bin/env bash
# Checks what CI must never let through: stale generated code (run after `make generate`),
# unformatted Go, an untidy go.mod, go vet findings, imports that break the layout's rules
# (internal/layout), and files a build or generation left uncommitted.
set -euo pipefail
cd "$(dirname "$0")/.."

status=0
unformatted=$(gofmt -l $(git ls-files --cached --others --exclude-standard '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change these files (run gofmt -w):" >&2
  echo "$unformatted" >&2
  status=1
fi

if ! go mod tidy -diff; then
  echo "go.mod/go.sum are not tidy (run go mod tidy)" >&2
  status=1
fi

if ! hack/vet.sh; then
  echo "go vet found problems" >&2
  status=1
fi

# The package graph docs/architecture.md draws: imports point one way, and neutral packages
# import no provider. A failure names each offending import.
if ! go test -count=1 -vet=off ./internal/layout/; then
  echo "an import breaks the layout's rules (docs/architecture.md, Layout)" >&2
  status=1
fi

# A built binary or a data dump committed by mistake makes every clone and every submission
# carry it; source, fixtures and generated code here are all far below this.
max_bytes=$((1024 * 1024))
large=$(git ls-files -z | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk -v max="$max_bytes" '$1 > max {print}')
if [ -n "$large" ]; then
  echo "tracked files larger than 1 MiB (binaries and dumps belong in ignored folders):" >&2
  echo "$large" >&2
  status=1
fi

dirty=$(git status --porcelain)
if [ -n "$dirty" ]; then
  echo "the tree is dirty after make generate: generated files are stale or changes are uncommitted:" >&2
  echo "$dirty" >&2
  git --no-pager diff --stat >&2
  status=1
fi
exit $status
