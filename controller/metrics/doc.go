// Package metrics exports Karpenter's gauges of cluster state from joinery-controller: per
// node (allocatable, pod and DaemonSet requests and limits, system overhead, age), per NodePool
// (limits, usage, nodes consuming disruption budgets; the cost is controller/cost's), per pod (state, time to bind and
// to start) and of the controller's view itself (cluster_state_*). The gauges are computed from
// the manager's cache; counters of events (nodes created, terminated, drained) live with the
// controllers that cause them.
package metrics
