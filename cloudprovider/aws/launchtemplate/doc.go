// Package launchtemplate keeps the EC2 launch templates joinery launches from: one per distinct
// launch configuration (AMI, user data, security groups, instance profile, block devices,
// metadata options, tags, capacity reservation), named karpenter.k8s.aws/<hash of the
// configuration> so that every replica and every restart finds the same template, created on
// first use, reused while in use and deleted once unused.
package launchtemplate
