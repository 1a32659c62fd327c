// Package state holds the small pieces of cluster state joinery's controllers share: the
// provider-ID indexes that link Nodes and NodeClaims, and the record of offerings that recently
// answered with insufficient capacity, which lives in a ConfigMap so that the scheduler plugin
// (another process) and `kubectl` can read it.
package state
