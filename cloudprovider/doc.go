// Package cloudprovider is the contract between joinery and the infrastructure that runs its
// nodes: the CloudProvider interface, the instance types and offerings that scheduling chooses
// from, the arithmetic that turns an instance type's capacity into what pods may use, and the
// typed errors callers classify with errors.As.
//
// It depends on apis/ and scheduling/ only, so the scheduler plugin, the simulation engine and
// the controllers can all use it without depending on any one provider.
package cloudprovider
