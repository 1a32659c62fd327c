// Package benchlive is the live benchmark (`make bench-live`): each workload runs on a fresh
// local cluster (etcd, kube-apiserver, kube-controller-manager, kwok, joinery-scheduler and
// joinery-controller from bin/), and the run reports how long the pods took to run, what
// capacity they got and what the components cost in CPU and memory. It is not part of `make
// test`: TestLive runs only with JOINERY_BENCH_LIVE=1, asserts no time, and prints a markdown
// table (docs/benchmarks.md, "Live").
package benchlive

// enableEnv turns the benchmark on; `go test ./e2e/...` skips it otherwise.
const enableEnv = "JOINERY_BENCH_LIVE"

// outEnv names a file the markdown table is also appended to.
const outEnv = "JOINERY_BENCH_LIVE_OUT"

// onlyEnv, if set, runs only the workloads whose names it lists (comma-separated).
const onlyEnv = "JOINERY_BENCH_LIVE_ONLY"

// profileEnv, if set, names a directory that gets a CPU profile of joinery-scheduler over
// each scale-up (<workload>[-run-N].pprof, for `go tool pprof`).
const profileEnv = "JOINERY_BENCH_LIVE_PROFILE"

// runsEnv, if set, runs every workload that many times, each on a fresh cluster, and adds a
// row of the medians per workload: one run on a shared machine is an anecdote.
const runsEnv = "JOINERY_BENCH_LIVE_RUNS"
