// Package termination holds the termination finalizer (karpenter.sh/termination) of NodeClaims
// and Nodes: deleting either deletes the other; the Node is tainted karpenter.sh/disrupted and
// drained through the Eviction API (PDBs respected, DaemonSet and system-critical pods last,
// do-not-disrupt pods held until the NodeClaim's terminationGracePeriod forces deletions); the
// node's VolumeAttachments are awaited (see awaitVolumeDetachment); then the instance is
// terminated through the cloud provider and the finalizers come off. A Node no NodeClaim claims
// is released at once, its instance terminated by provider ID.
package termination
