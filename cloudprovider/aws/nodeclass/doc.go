// Package nodeclass resolves an EC2NodeClass's selectors against AWS: the subnets, security
// groups, AMIs and capacity reservations its terms select, and the instance profile its nodes
// use (managed by joinery for spec.role, or spec.instanceProfile as is). It talks to EC2, SSM
// and IAM through the narrow client interfaces in api.go, which the aws-sdk-go-v2 clients
// satisfy; tests run those real clients against internal/awsemulator.
//
// Selector terms are ORed and the conditions inside one term ANDed. A tag value of "*" or ""
// matches any resource carrying the key; other values are EC2 filter patterns, where "*" is a
// wildcard.
package nodeclass
