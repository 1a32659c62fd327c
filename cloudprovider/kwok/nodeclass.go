package kwok

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	kwokv1alpha1 "github.com/joinery-dev/joinery/apis/kwok/v1alpha1"
	"github.com/joinery-dev/joinery/cloudprovider"
)

// checkNodeClass returns nil when ref names a Ready KWOKNodeClass, a NodeClassNotReadyError when
// the class is missing or not Ready, and a plain error for a kind this provider does not serve.
func (p *CloudProvider) checkNodeClass(ctx context.Context, ref *karpv1.NodeClassReference) error {
	if ref == nil {
		return errors.New("no nodeClassRef")
	}
	if gk := kwokv1alpha1.GroupVersionKind().GroupKind(); ref.GroupKind() != gk {
		return fmt.Errorf("nodeClassRef %s/%s is not supported by the kwok provider, which serves %s", ref.GroupKind(), ref.Name, gk)
	}
	var class kwokv1alpha1.KWOKNodeClass
	if err := p.client.Get(ctx, client.ObjectKey{Name: ref.Name}, &class); err != nil {
		if apierrors.IsNotFound(err) {
			return cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("KWOKNodeClass %s not found", ref.Name))
		}
		return fmt.Errorf("getting KWOKNodeClass %s: %w", ref.Name, err)
	}
	if ready, why := class.Ready(); !ready {
		return cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("KWOKNodeClass %s: %s", ref.Name, why))
	}
	return nil
}
