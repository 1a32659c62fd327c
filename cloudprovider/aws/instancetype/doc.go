// Package instancetype turns EC2's instance types into joinery's: it loads
// DescribeInstanceTypes and the per-zone DescribeInstanceTypeOfferings, and for a resolved
// EC2NodeClass builds cloudprovider.InstanceTypes with the well-known labels, capacity,
// overhead and offerings (zone × capacity type, priced, with availability) that the class's
// subnets, AMIs, capacity reservations and kubelet settings allow.
//
// joinery-scheduler and joinery-controller both use it; both only read from AWS here.
package instancetype
