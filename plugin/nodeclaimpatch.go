package plugin

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// patchNodeClaim applies change to the NodeClaim name and patches what it changed under an
// optimistic lock, reading the NodeClaim again on conflict so that concurrent writers (another
// profile, the lifecycle controller) lose nothing. change reports whether it changed the
// NodeClaim, or an error to stop with. With fromCache, the first read is the informer's copy
// (a stale one costs a conflict; one the informer does not show yet, such as a NodeClaim this
// process has just created, is read from the API server); every other read is the API
// server's.
func (p *Plugin) patchNodeClaim(ctx context.Context, name string, fromCache bool, change func(*karpv1.NodeClaim) (bool, error)) error {
	var cached client.Reader
	if fromCache {
		cached = p.nodeClaimCache
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		nc := &karpv1.NodeClaim{}
		var err error
		if cached != nil {
			err = cached.Get(ctx, client.ObjectKey{Name: name}, nc)
		}
		if cached == nil || apierrors.IsNotFound(err) {
			err = p.client.Get(ctx, client.ObjectKey{Name: name}, nc)
		}
		cached = nil
		if err != nil {
			return fmt.Errorf("reading NodeClaim %s: %w", name, err)
		}
		before := nc.DeepCopy()
		changed, err := change(nc)
		if err != nil || !changed {
			return err
		}
		if err := p.client.Patch(ctx, nc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("annotating NodeClaim %s: %w", name, err)
		}
		return nil
	})
}
