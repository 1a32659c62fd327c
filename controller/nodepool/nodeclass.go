package nodepool

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
)

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
func checkNodeClass(ctx context.Context, c client.Client, supported map[schema.GroupKind]schema.GroupVersionKind, ref *karpv1.NodeClassReference) (nodeClassReadiness, error) {
	if ref == nil {
		return nodeClassReadiness{reason: reasonNodeClassNotFound, message: "spec.template.spec.nodeClassRef is not set"}, nil
	}
	gvk, ok := supported[ref.GroupKind()]
	if !ok {
		return nodeClassReadiness{
			reason:  reasonUnsupportedNodeClass,
			message: fmt.Sprintf("node class kind %s is not supported by the cloud provider", ref.GroupKind()),
		}, nil
	}
	obj, err := newNodeClass(c.Scheme(), gvk)
	if err != nil {
		return nodeClassReadiness{}, err
	}
	if err := c.Get(ctx, client.ObjectKey{Name: ref.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nodeClassReadiness{reason: reasonNodeClassNotFound, message: fmt.Sprintf("%s %s not found", ref.Kind, ref.Name)}, nil
		}
		return nodeClassReadiness{}, fmt.Errorf("getting %s %s: %w", ref.Kind, ref.Name, err)
	}
	cond := meta.FindStatusCondition(obj.GetConditions(), karpv1.ConditionTypeReady)
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

// newNodeClass is an empty node class of kind gvk to read one into.
func newNodeClass(scheme *runtime.Scheme, gvk schema.GroupVersionKind) (cloudprovider.NodeClass, error) {
	obj, err := scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("node class %s: %w", gvk, err)
	}
	class, ok := obj.(cloudprovider.NodeClass)
	if !ok {
		return nil, fmt.Errorf("node class %s has no status conditions (%T is not a cloudprovider.NodeClass)", gvk, obj)
	}
	return class, nil
}

// supportedNodeClasses indexes the cloud provider's node classes by group and kind; a kind the
// provider cannot launch leaves its NodePools unready even when the class itself exists.
func supportedNodeClasses(scheme *runtime.Scheme, classes []cloudprovider.NodeClass) (map[schema.GroupKind]schema.GroupVersionKind, error) {
	out := map[schema.GroupKind]schema.GroupVersionKind{}
	for _, class := range classes {
		gvk, err := apiutil.GVKForObject(class, scheme)
		if err != nil {
			return nil, fmt.Errorf("node class %T: %w", class, err)
		}
		out[gvk.GroupKind()] = gvk
	}
	return out, nil
}
