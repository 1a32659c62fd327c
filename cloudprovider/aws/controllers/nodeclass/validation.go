package nodeclass

import (
	"fmt"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
)

// validate checks what the CRD's schema and CEL rules cannot, and returns the first problem
// ("" when there is none). (Karpenter also dry-runs the launch calls here to prove the
// controller's permissions; that belongs with launching and is not done yet.)
func validate(nc *awsv1.EC2NodeClass) string {
	if alias, ok := nc.Alias(); ok && nc.Spec.AMIFamily != nil && *nc.Spec.AMIFamily != alias.Family {
		return fmt.Sprintf("spec.amiFamily %s contradicts the alias %s, which implies %s", *nc.Spec.AMIFamily, nc.Spec.AMISelectorTerms[0].Alias, alias.Family)
	}
	if nc.AMIFamily() == "" {
		return "no AMI family: set spec.amiFamily or select AMIs by alias"
	}
	return ""
}
