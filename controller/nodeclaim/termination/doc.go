// Package termination holds the termination finalizer (karpenter.sh/termination) of NodeClaims
// and Nodes, in its basic form: deleting either deletes the other, the instance is terminated
// through the cloud provider, and the finalizers come off once it is. Graceful drain (taint,
// evictions, terminationGracePeriod, volume detachment) is not done here yet: a Node is released
// as soon as its instance's termination has begun.
package termination
