// Package provider is joinery's AWS cloud provider: it implements cloudprovider.CloudProvider
// on EC2 by combining the EC2NodeClass status the nodeclass controller resolves, the instance
// types of package instancetype, the user data of package amifamily, the launch templates of
// package launchtemplate and the fleets and instances of package instance.
//
// A launch asks one instant fleet for every (instance type, zone) the NodeClaim allows at its
// most preferred capacity type (reserved, then spot, then on-demand), cheapest first, in the
// subnet with the most free addresses of each zone. Offerings the fleet refuses for capacity
// are recorded as unavailable for cloudprovider.UnavailableOfferingsTTL, both in memory and, when
// configured, in the cluster-wide record the scheduler plugin reads.
package provider
