// Package apis gathers every API group joinery serves, so binaries and tests register them in
// one call.
package apis

import (
	"k8s.io/apimachinery/pkg/runtime"

	autoscalingv1alpha1 "github.com/joinery-dev/joinery/apis/autoscaling/v1alpha1"
	autoscalingv1beta1 "github.com/joinery-dev/joinery/apis/autoscaling/v1beta1"
	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpenterv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	karpenterv1alpha1 "github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
	kwokv1alpha1 "github.com/joinery-dev/joinery/apis/kwok/v1alpha1"
)

var schemeBuilder = runtime.NewSchemeBuilder(
	karpenterv1.AddToScheme,
	karpenterv1alpha1.AddToScheme,
	awsv1.AddToScheme,
	autoscalingv1alpha1.AddToScheme,
	autoscalingv1beta1.AddToScheme,
	kwokv1alpha1.AddToScheme,
)

// AddToScheme registers NodePool, NodeClaim, NodeOverlay, EC2NodeClass, CapacityBuffer and
// KWOKNodeClass.
var AddToScheme = schemeBuilder.AddToScheme
