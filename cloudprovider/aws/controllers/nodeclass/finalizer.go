package nodeclass

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// ec2NodeClassKind is the kind NodeClaims' nodeClassRef names.
const ec2NodeClassKind = "EC2NodeClass"

// maxNamesInEvent bounds the NodeClaims an event lists.
const maxNamesInEvent = 5

// finalize lets a deleting class go once no NodeClaim refers to it: it runs the OnDelete
// cleanup, deletes the instance profile joinery manages for the class and removes the
// finalizer. Until then it says, in an
// event, which NodeClaims it waits for.
func (c *Controller) finalize(ctx context.Context, nc *awsv1.EC2NodeClass) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(nc, TerminationFinalizer) {
		return ctrl.Result{}, nil
	}
	users, err := nodeClaimsUsing(ctx, c.client, nc.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(users) > 0 {
		shown := users
		if len(shown) > maxNamesInEvent {
			shown = shown[:maxNamesInEvent]
		}
		note := "Waiting on NodeClaim termination for " + strings.Join(shown, ", ")
		if more := len(users) - len(shown); more > 0 {
			note += fmt.Sprintf(" and %d more", more)
		}
		c.recorder.Eventf(nc, nil, corev1.EventTypeNormal, "WaitingOnNodeClaimTermination", "Delete", note)
		logr.FromContextOrDiscard(ctx).V(1).Info("deletion waits for nodeclaims", "nodeClaims", len(users))
		return ctrl.Result{RequeueAfter: c.opts.DeletionPollInterval}, nil
	}
	if c.opts.OnDelete != nil {
		if err := c.opts.OnDelete(ctx, nc); err != nil {
			c.recorder.Eventf(nc, nil, corev1.EventTypeWarning, "FailedCleanup", "Delete", "Cleaning up after the class: %v", err)
			return ctrl.Result{}, fmt.Errorf("cleaning up after ec2nodeclass %s: %w", nc.Name, err)
		}
	}
	if err := c.resolver.DeleteInstanceProfile(ctx, nc); err != nil {
		c.recorder.Eventf(nc, nil, corev1.EventTypeWarning, "FailedDeletingInstanceProfile", "Delete", "Deleting the managed instance profile: %v", err)
		return ctrl.Result{}, fmt.Errorf("deleting the instance profile of ec2nodeclass %s: %w", nc.Name, err)
	}
	stored := nc.DeepCopy()
	controllerutil.RemoveFinalizer(nc, TerminationFinalizer)
	if err := c.client.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("removing the finalizer of ec2nodeclass %s: %w", nc.Name, err))
	}
	return ctrl.Result{}, nil
}

// nodeClaimsUsing returns the names of the NodeClaims whose nodeClassRef names the class,
// sorted.
func nodeClaimsUsing(ctx context.Context, c client.Client, className string) ([]string, error) {
	list := &karpv1.NodeClaimList{}
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing nodeclaims: %w", err)
	}
	var names []string
	for _, nc := range list.Items {
		if usesClass(&nc, className) {
			names = append(names, nc.Name)
		}
	}
	sort.Strings(names)
	return names, nil
}

func usesClass(nc *karpv1.NodeClaim, className string) bool {
	ref := nc.Spec.NodeClassRef
	return ref != nil && ref.Group == awsv1.Group && ref.Kind == ec2NodeClassKind && ref.Name == className
}
