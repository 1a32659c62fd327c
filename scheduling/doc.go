// Package scheduling is joinery's scheduling vocabulary: the requirements algebra over node
// labels (Karpenter's eight operators), the registry of well-known labels, and pod resource
// requests as the kubelet and kube-scheduler count them.
//
// Nothing here decides that a pod fits a node: the kube-scheduler Filters do. The algebra is a
// fast pre-filter and the language of hypothetical nodes (a NodeClaim in progress is a set of
// requirements), so it is exact where it can be and allocation-free on its hot paths
// (Requirements.Compatible, Requirements.Intersects, Requirement.Has).
package scheduling
