// Package buffer turns CapacityBuffers (autoscaling.x-k8s.io) into what both simulations
// need: the number of chunks a buffer asks for (Replicas) and its virtual pods (VirtualPods),
// in-memory pods with deterministic UIDs that are never written to the API server. The
// buffer controller in joinery-controller sizes buffers with Replicas; joinery-scheduler's
// Provisioner plans their virtual pods with the pending pods, and the disruption controller
// keeps room for them when it removes nodes.
package buffer
