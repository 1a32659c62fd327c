// Package integration runs the disruption loop, with the provisioning solver as its
// simulation, against a real kube-apiserver (internal/testcluster): drift replacement and
// deletion decided by the real kube-scheduler Filters, and a controller restarted in the
// middle of a command. The test plays the lifecycle controller: it marks the replacements
// Initialized.
package integration
