# joinery's build. Every target works on a machine that has only Go: tools come from go.mod.
SHELL := /usr/bin/env bash -o pipefail
.DEFAULT_GOAL := build

GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)
KUBE_VERSION := $(shell $(GO) list -m -f '{{.Version}}' k8s.io/kubernetes)
KUBE_MINOR   := $(word 2,$(subst ., ,$(KUBE_VERSION)))
TEST_FLAGS ?= -timeout 30m
# Test binaries are linked without DWARF (stack traces and race reports do not need it): about
# 90 test binaries of 100+ MB each link a third faster, minutes of a cold make test on 2 cores.
TEST_LDFLAGS ?= -ldflags=-w

# Every go command builds with -trimpath, as the binaries always did: go vet, the generators,
# the tools, the binaries and the tests then share one build-cache entry per package (without
# it, vet and the tests compiled all of Kubernetes a second time), and a checkout in another
# folder (a CI clone) reuses the cache instead of recompiling joinery's own packages.
export GOFLAGS := $(strip $(GOFLAGS) -trimpath)

# As Kubernetes' own release builds, joinery's binaries, tests and tools carry no debug
# information unless DBG=1: the compiler then skips generating DWARF for every package (about an
# eighth of the CPU of a cold build, measured on client-go) and the links are shorter. Stack
# traces and race reports keep their files and lines (they come from the pclntab, not DWARF).
# `make build DBG=1` builds binaries a debugger can step through, from a build cache of its own.
DBG ?=
ifneq ($(DBG),1)
export GOFLAGS := $(GOFLAGS) -gcflags=all=-dwarf=false
BUILD_LDFLAGS := -s -w
endif

# kube-scheduler reports the Kubernetes version it is built from; joinery's own version goes
# into internal/version.
LDFLAGS := -X github.com/joinery-dev/joinery/internal/version.Version=$(VERSION) \
           -X github.com/joinery-dev/joinery/internal/version.Commit=$(COMMIT) \
           -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
           -X k8s.io/component-base/version.gitMajor=1 \
           -X k8s.io/component-base/version.gitMinor=$(KUBE_MINOR) \
           -X k8s.io/component-base/version.gitTreeState=clean

.PHONY: build
build: ## Build joinery-scheduler, joinery-controller, the joinery CLI and the AWS emulator (cmd/awsemulator, for the local cluster) into bin/
	$(GO) build -trimpath -ldflags "$(BUILD_LDFLAGS) $(LDFLAGS)" -o bin/ ./cmd/joinery-scheduler ./cmd/joinery-controller ./cmd/joinery ./cmd/awsemulator

.PHONY: tools
tools: ## Build etcd, kube-apiserver, kube-controller-manager and kwok from go.mod into .local/bin (once; rebuilt when go.mod changes)
	hack/tools.sh etcd kube-apiserver kube-controller-manager kwok

.PHONY: generate
generate: ## Generate deepcopy functions, the CRDs in manifests/crds (copied into charts/joinery/crds), manifests/deploy from charts/joinery, and docs/metrics.md
	$(GO) tool controller-gen object paths=./apis/...
	rm -f manifests/crds/*.yaml
	$(GO) tool controller-gen crd paths=./apis/... output:crd:dir=manifests/crds
	$(GO) run ./hack/chartgen
	$(GO) run ./hack/metricsdocs -out docs/metrics.md

.PHONY: verify
verify: generate ## Fail when generated files are stale, code is not gofmt'ed, go vet complains, an import breaks the layout's rules or the tree is dirty
	hack/verify.sh

# e2e suites run at once: each starts its own local cluster and mostly waits on it, so more
# suites than cores keep the machine busy (go test's default -p is the number of cores).
E2E_PARALLEL ?= 3
# go test starts the suites in this order: the longest first (e2e/disruption about 7 minutes,
# e2e/provisioning and e2e/aws about 3.5 each on 2 cores), so the short ones fill the other
# slots around them instead of one long suite starting last and running alone.
E2E_PACKAGES = ./e2e/disruption ./e2e/provisioning ./e2e/aws ./e2e/...

# The unit and integration packages (hack/unit-packages.sh says which and why); hack/tools/
# holds only the tools' main packages: under -race, go test would compile etcd's server a
# second time for nothing.
UNIT_PACKAGES = $$(hack/unit-packages.sh)

.PHONY: test
# The unit and integration packages run once, under the race detector (linking every test
# binary twice, with and without -race, was most of CI's time), and the e2e suites alongside
# them (hack/test.sh).
# The unit and integration results are cached by go test: a package reruns when its code,
# its dependencies (go.mod pins the tools its integration tests start) or the files and
# environment it reads change; -count=1 for the e2e suites: they run bin/ binaries the test
# cache cannot see, so a cached pass could hide a regression in them.
# TEST_FLAGS="-timeout 30m -count=1" reruns everything.
test: tools build ## Unit and integration tests under the race detector, and the e2e suites alongside them (what CI runs); integration and e2e tests start real clusters on 127.0.0.1
	GO="$(GO)" TEST_LDFLAGS="$(TEST_LDFLAGS)" TEST_FLAGS="$(TEST_FLAGS)" E2E_PARALLEL="$(E2E_PARALLEL)" \
		E2E_PACKAGES="$(E2E_PACKAGES)" hack/test.sh

.PHONY: test-race
test-race: tools ## Only the unit and integration tests, under the race detector
	GO="$(GO)" hack/vet.sh
	$(GO) test -race -vet=off -count=1 $(TEST_LDFLAGS) $(TEST_FLAGS) $(UNIT_PACKAGES)

LOCALCLUSTER := .local/bin/localcluster
# joinery's cloud provider on the local cluster: kwok, or aws (the AWS emulator).
CLOUD_PROVIDER ?= kwok

.PHONY: localcluster
localcluster:
	@$(GO) build -o $(LOCALCLUSTER) ./hack/localcluster

.PHONY: cluster
cluster: tools build localcluster ## Start the local cluster in the background; prints the kubeconfig (.local/kubeconfig); CLOUD_PROVIDER=aws runs the AWS provider against the emulator
	@$(LOCALCLUSTER) up --build=false --cloud-provider=$(CLOUD_PROVIDER)

.PHONY: cluster-down
cluster-down: localcluster ## Stop the local cluster: every process ends, ports freed, data removed
	@$(LOCALCLUSTER) down

.PHONY: run
run: localcluster ## Start the local cluster with a sample NodePool and workload and watch it live; Ctrl-C stops it; CLOUD_PROVIDER=aws runs the AWS provider against the emulator
	@$(LOCALCLUSTER) run --cloud-provider=$(CLOUD_PROVIDER)

# The suites start the local cluster themselves, or run against the cluster KUBECONFIG names.
.PHONY: e2e
e2e: tools build ## Run the e2e suites on the local cluster, or on the cluster KUBECONFIG names when set
	JOINERY_E2E_KUBECONFIG="$(KUBECONFIG)" $(GO) test $(TEST_FLAGS) -count=1 ./e2e/...

# The live benchmark (e2e/benchlive): each workload on a fresh local cluster, one after the
# other; prints a markdown table (BENCH_LIVE_OUT also gets it). Not part of `make test`.
# BENCH_LIVE_ONLY=zone-spread-500 runs only the named workloads (comma-separated);
# BENCH_LIVE_RUNS=3 runs each three times and adds a row of the medians; BENCH_LIVE_PROFILE=dir
# writes a CPU profile of joinery-scheduler over each scale-up there.
BENCH_LIVE_OUT ?=
BENCH_LIVE_ONLY ?=
BENCH_LIVE_RUNS ?= 1
BENCH_LIVE_PROFILE ?=
.PHONY: bench-live
bench-live: tools build ## Run the live benchmark: time to Running, NodeClaims, cost per hour and the components' CPU and memory per workload
	JOINERY_BENCH_LIVE=1 JOINERY_BENCH_LIVE_OUT="$(BENCH_LIVE_OUT)" JOINERY_BENCH_LIVE_ONLY="$(BENCH_LIVE_ONLY)" \
		JOINERY_BENCH_LIVE_RUNS="$(BENCH_LIVE_RUNS)" JOINERY_BENCH_LIVE_PROFILE="$(BENCH_LIVE_PROFILE)" \
		$(GO) test -count=1 -timeout $$((90 * $(BENCH_LIVE_RUNS)))m -v -run '^TestLive$$' ./e2e/benchlive/

.PHONY: fuzz
fuzz: ## Run the fuzz targets for a short while each
	$(GO) test ./scheduling/ -run '^$$' -fuzz FuzzIntersection -fuzztime 60s

.PHONY: help
help: ## Show the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'
