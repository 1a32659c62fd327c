// Package solver is joinery's provisioning solver: given pending pods, it decides which
// in-flight NodeClaims they will land on and which new NodeClaims to create, following
// Karpenter's provisioning semantics (NodePools by weight, limits, requirements, minValues,
// preferences relaxed one at a time) while the real kube-scheduler Filters, run by the
// simulation engine on hypothetical nodes, decide every fit. docs/solver.md has the design.
package solver
