// Package integration tests the NodeClaim controllers against a real etcd and kube-apiserver
// (from .local/bin; `make tools` builds them) with the kwok cloud provider: a controller
// "crashes" at a chosen call — nothing it does afterwards reaches the API server — and a fresh
// controller must finish the job with no instance launched twice, none leaked and no finalizer
// left behind. The tests live in _test files; this package has no code of its own.
package integration
