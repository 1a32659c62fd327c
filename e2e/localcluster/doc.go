// Package localcluster runs a real Kubernetes control plane on 127.0.0.1 from binaries built
// by hack/tools.sh: etcd and kube-apiserver, each its own process with its own log file and
// readiness check, on free ports so that several clusters can run side by side. The
// integration tests, the e2e suites and `make run` build on it.
//
// Layout of Options.Dir:
//
//	pki/               CA, serving and admin certificates, service-account key
//	etcd/              etcd's data
//	admin.kubeconfig   admin credentials (system:masters), certificates embedded
//	logs/<name>.log    one log per component, appended across runs
package localcluster
