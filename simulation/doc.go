// Package simulation is joinery's scheduling simulator: the real kube-scheduler framework,
// built from the scheduler's own profile, run over a snapshot of the cluster to which
// hypothetical nodes and planned pods can be added, forked and reverted.
//
// The Filters decide whether a pod fits a node; nothing in this package second-guesses them.
// The surface used is the framework's autoscaler contract (k8s.io/kubernetes
// pkg/scheduler/framework/autoscaler_contract): runtime.NewFramework, NewCycleState,
// RunPreFilterPlugins, RunFilterPlugins, RunReservePluginsReserve and the SharedLister.
//
// An Engine is used from one goroutine at a time; it parallelises Filters internally.
package simulation
