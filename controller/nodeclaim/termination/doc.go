// Package termination holds the termination finalizer (karpenter.sh/termination) of NodeClaims
// and Nodes: deleting either deletes the other; the Node is tainted karpenter.sh/disrupted and
// drained through the Eviction API (PDBs respected, DaemonSet and system-critical pods last,
// do-not-disrupt pods held until the NodeClaim's terminationGracePeriod forces deletions); then
// the instance is terminated through the cloud provider and the finalizers come off. Volume
// detachment is not awaited yet.
package termination
