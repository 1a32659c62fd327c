package nodepool

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	kwokv1alpha1 "github.com/joinery-dev/joinery/apis/kwok/v1alpha1"
)

// ec2NodeClassKind is the kind a nodeClassRef names for AWS.
const ec2NodeClassKind = "EC2NodeClass"

// nodeClassKind says how to read one kind of node class.
type nodeClassKind struct {
	newObject  func() client.Object
	conditions func(client.Object) []metav1.Condition
}

// knownNodeClasses are the node class kinds whose readiness this controller can read.
var knownNodeClasses = map[schema.GroupKind]nodeClassKind{
	{Group: kwokv1alpha1.Group, Kind: kwokv1alpha1.KWOKNodeClassKind}: {
		newObject:  func() client.Object { return &kwokv1alpha1.KWOKNodeClass{} },
		conditions: func(o client.Object) []metav1.Condition { return o.(*kwokv1alpha1.KWOKNodeClass).Status.Conditions },
	},
	{Group: awsv1.Group, Kind: ec2NodeClassKind}: {
		newObject:  func() client.Object { return &awsv1.EC2NodeClass{} },
		conditions: func(o client.Object) []metav1.Condition { return o.(*awsv1.EC2NodeClass).Status.Conditions },
	},
}

// Reasons of a False NodeClassReady condition.
const (
	reasonNodeClassNotFound    = "NodeClassNotFound"
	reasonNodeClassNotReady    = "NodeClassNotReady"
	reasonUnsupportedNodeClass = "UnsupportedNodeClass"
)

// nodeClassReadiness is the outcome of looking at a NodePool's node class.
type nodeClassReadiness struct {
	ready   bool
	reason  string
	message string
}

// checkNodeClass reads the node class ref names among the supported kinds. Only an API error
// other than NotFound is returned as an error; everything else is a readiness verdict.
func checkNodeClass(ctx context.Context, c client.Client, supported map[schema.GroupKind]nodeClassKind, ref *karpv1.NodeClassReference) (nodeClassReadiness, error) {
	if ref == nil {
		return nodeClassReadiness{reason: reasonNodeClassNotFound, message: "spec.template.spec.nodeClassRef is not set"}, nil
	}
	kind, ok := supported[ref.GroupKind()]
	if !ok {
		return nodeClassReadiness{
			reason:  reasonUnsupportedNodeClass,
			message: fmt.Sprintf("node class kind %s is not supported by the cloud provider", ref.GroupKind()),
		}, nil
	}
	obj := kind.newObject()
	if err := c.Get(ctx, client.ObjectKey{Name: ref.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nodeClassReadiness{reason: reasonNodeClassNotFound, message: fmt.Sprintf("%s %s not found", ref.Kind, ref.Name)}, nil
		}
		return nodeClassReadiness{}, fmt.Errorf("getting %s %s: %w", ref.Kind, ref.Name, err)
	}
	cond := meta.FindStatusCondition(kind.conditions(obj), karpv1.ConditionTypeReady)
	switch {
	case cond == nil:
		return nodeClassReadiness{reason: reasonNodeClassNotReady, message: fmt.Sprintf("%s %s has no Ready condition yet", ref.Kind, ref.Name)}, nil
	case cond.Status != metav1.ConditionTrue:
		message := fmt.Sprintf("%s %s is not ready: Ready=%s", ref.Kind, ref.Name, cond.Status)
		if cond.Reason != "" {
			message += " (" + cond.Reason
			if cond.Message != "" {
				message += ": " + cond.Message
			}
			message += ")"
		}
		return nodeClassReadiness{reason: reasonNodeClassNotReady, message: message}, nil
	default:
		return nodeClassReadiness{ready: true}, nil
	}
}

// supportedNodeClasses keeps the known kinds among those the cloud provider launches; a kind
// the provider cannot launch leaves its NodePools unready even when the class itself exists.
func supportedNodeClasses(providerKinds []schema.GroupVersionKind) map[schema.GroupKind]nodeClassKind {
	out := map[schema.GroupKind]nodeClassKind{}
	for _, gvk := range providerKinds {
		if kind, ok := knownNodeClasses[gvk.GroupKind()]; ok {
			out[gvk.GroupKind()] = kind
		}
	}
	return out
}
