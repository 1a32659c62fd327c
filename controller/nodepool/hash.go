package nodepool

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// HashVersion is the value of the karpenter.sh/nodepool-hash-version annotation. It differs
// from Karpenter's own versions on purpose: joinery hashes differently, so NodeClaims stamped by
// Karpenter must be recognized as carrying another algorithm's hash rather than as drifted.
// Bump it whenever Hash changes what it covers.
const HashVersion = "joinery-v1"

// Hash is the NodePool's drift hash: FNV-64a of the JSON of spec.template, in decimal as in
// Karpenter's annotations. Fields outside the template (weight, limits, disruption) are
// behavioural and never cause drift. Requirements are left out too: the docs make them a
// special case judged against each NodeClaim's labels, so widening them must not drift nodes
// that still satisfy them.
func Hash(np *karpv1.NodePool) (string, error) {
	template := np.Spec.Template.DeepCopy()
	template.Spec.Requirements = nil
	// encoding/json sorts map keys, so equal templates always give equal bytes.
	data, err := json.Marshal(template)
	if err != nil {
		return "", fmt.Errorf("encoding the template of nodepool %s: %w", np.Name, err)
	}
	h := fnv.New64a()
	_, _ = h.Write(data) // a hash.Hash never fails to write
	return strconv.FormatUint(h.Sum64(), 10), nil
}

// stampHash sets the hash annotations on np and reports whether they changed.
func stampHash(np *karpv1.NodePool) (bool, error) {
	hash, err := Hash(np)
	if err != nil {
		return false, err
	}
	if np.Annotations[karpv1.NodePoolHashAnnotationKey] == hash &&
		np.Annotations[karpv1.NodePoolHashVersionAnnotationKey] == HashVersion {
		return false, nil
	}
	if np.Annotations == nil {
		np.Annotations = map[string]string{}
	}
	np.Annotations[karpv1.NodePoolHashAnnotationKey] = hash
	np.Annotations[karpv1.NodePoolHashVersionAnnotationKey] = HashVersion
	return true, nil
}
