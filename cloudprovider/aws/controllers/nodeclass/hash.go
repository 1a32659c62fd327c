package nodeclass

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
)

// HashVersion is the value of the karpenter.k8s.aws/ec2nodeclass-hash-version annotation. It
// differs from Karpenter's on purpose: joinery hashes differently, so NodeClaims stamped by
// Karpenter read as carrying another algorithm's hash rather than as drifted. Bump it whenever
// Hash changes what it covers.
const HashVersion = "joinery-v1"

// Hash is the class's static drift hash: FNV-64a of the JSON of its spec without the selector
// terms, the placement group selector, ipPrefixCount and the node identity. Selectors drift through what they resolve to (status), not
// through their text, and role and instanceProfile are immutable or user-managed.
func Hash(nc *awsv1.EC2NodeClass) (string, error) {
	spec := nc.Spec.DeepCopy()
	spec.SubnetSelectorTerms = nil
	spec.SecurityGroupSelectorTerms = nil
	spec.AMISelectorTerms = nil
	spec.CapacityReservationSelectorTerms = nil
	spec.PlacementGroupSelector = nil // drifts through the group it resolves to
	spec.IPPrefixCount = nil          // Karpenter leaves it out of the hash: no drift
	spec.Role = ""
	spec.InstanceProfile = nil
	data, err := json.Marshal(spec) // encoding/json sorts map keys: equal specs, equal bytes
	if err != nil {
		return "", fmt.Errorf("encoding the spec of ec2nodeclass %s: %w", nc.Name, err)
	}
	h := fnv.New64a()
	_, _ = h.Write(data)
	return strconv.FormatUint(h.Sum64(), 10), nil
}

// updateMetadata adds the finalizer and refreshes the hash annotations, in one patch and only
// when either changed.
func (c *Controller) updateMetadata(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	stored := nc.DeepCopy()
	hash, err := Hash(nc)
	if err != nil {
		return err
	}
	changed := controllerutil.AddFinalizer(nc, TerminationFinalizer)
	if nc.Annotations[awsv1.AnnotationEC2NodeClassHash] != hash || nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] != HashVersion {
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		nc.Annotations[awsv1.AnnotationEC2NodeClassHash] = hash
		nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = HashVersion
		changed = true
	}
	if !changed {
		return nil
	}
	if err := c.client.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("patching ec2nodeclass %s metadata: %w", nc.Name, err))
	}
	return nil
}
