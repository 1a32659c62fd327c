package scheduling

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// WellKnownLabels are the label keys that joinery derives from instance types and offerings (or
// sets itself), so a pod may constrain them even when a NodePool leaves them open: "if a
// requirement is not defined for a well known label, any value available to the cloud provider
// may be chosen". Pass it as allowUndefined to Requirements.Compatible. Treat it as read-only:
// it holds Kubernetes' and Karpenter's keys, and cloud providers add their own (the instance
// types' and offerings' labels) with RegisterWellKnownLabels.
var WellKnownLabels = sets.New(
	// Kubernetes.
	corev1.LabelArchStable,
	corev1.LabelOSStable,
	corev1.LabelInstanceTypeStable,
	corev1.LabelTopologyZone,
	corev1.LabelTopologyRegion,
	corev1.LabelHostname,
	corev1.LabelWindowsBuild,
	// Karpenter.
	karpv1.NodePoolLabelKey,
	karpv1.CapacityTypeLabelKey,
)

// RegisterWellKnownLabels adds a cloud provider's label keys to WellKnownLabels. Providers call
// it from an init function of the package that builds their instance types, as Karpenter's
// providers extend its well-known labels, so the set is complete before any caller reads it;
// it is not safe to call concurrently with readers.
func RegisterWellKnownLabels(keys ...string) {
	WellKnownLabels.Insert(keys...)
}

// IsWellKnownLabel reports whether key is in WellKnownLabels.
func IsWellKnownLabel(key string) bool { return WellKnownLabels.Has(key) }

// labelTranslations maps label keys that mean the same as a well-known key onto it: Kubernetes'
// deprecated beta labels (which Karpenter translates to their stable equivalents) and the keys
// cloud providers register with RegisterLabelAlias.
var labelTranslations = map[string]string{
	"beta.kubernetes.io/arch":           corev1.LabelArchStable,
	"beta.kubernetes.io/os":             corev1.LabelOSStable,
	corev1.LabelInstanceType:            corev1.LabelInstanceTypeStable,
	corev1.LabelFailureDomainBetaZone:   corev1.LabelTopologyZone,
	corev1.LabelFailureDomainBetaRegion: corev1.LabelTopologyRegion,
}

// RegisterLabelAlias makes alias stand for the well-known key: requirements that select alias
// (a pod's, a PersistentVolume's node affinity) select key, and the nodes joinery makes carry
// alias with key's value (LabelAliases). Providers call it from an init function, as they call
// RegisterWellKnownLabels (the AWS provider registers its CSI driver's zone key); it is not
// safe to call concurrently with readers.
func RegisterLabelAlias(alias, key string) {
	labelTranslations[alias] = key
}

// LabelAliases returns the keys of labelTranslations that labels lacks a value for but real
// nodes carry, each with the value of the well-known key it stands for in labels (the kubelet
// sets the beta keys, a provider's CSI driver its zone key). Nodes joinery makes — hypothetical or
// kwok — carry them so that pods and volumes selecting them find them.
func LabelAliases(labels map[string]string) map[string]string {
	aliases := map[string]string{}
	for alias, key := range labelTranslations {
		if v, ok := labels[key]; ok {
			aliases[alias] = v
		}
	}
	return aliases
}

// IsLabelAlias reports whether key is one of the keys LabelAliases sets.
func IsLabelAlias(key string) bool {
	_, ok := labelTranslations[key]
	return ok
}

// NormalizeLabelKey returns the well-known key that key stands for (see labelTranslations), or
// key itself. Requirements built from pods and volumes go through it, so a pod selecting
// failure-domain.beta.kubernetes.io/zone is matched against NodePools' topology.kubernetes.io/zone.
func NormalizeLabelKey(key string) string {
	if translated, ok := labelTranslations[key]; ok {
		return translated
	}
	return key
}

// IsRestrictedLabel returns an error when key may not be set by users as a NodePool requirement
// or template label, because its domain belongs to Kubernetes or to joinery itself. Well-known
// labels (and the deprecated keys that translate to them) are allowed in restricted domains,
// except kubernetes.io/hostname, which only the node itself may decide. node.kubernetes.io and
// node-restriction.kubernetes.io are left to users: kubelets may label their own nodes in the
// first, and the second exists for cluster administrators.
func IsRestrictedLabel(key string) error {
	if key == corev1.LabelHostname {
		return fmt.Errorf("label %q is restricted: the node's hostname decides it", key)
	}
	if WellKnownLabels.Has(NormalizeLabelKey(key)) {
		return nil
	}
	domain, _, found := strings.Cut(key, "/")
	if !found {
		return nil
	}
	for _, allowed := range []string{"node.kubernetes.io", "node-restriction.kubernetes.io"} {
		if inDomain(domain, allowed) {
			return nil
		}
	}
	for _, restricted := range []string{"kubernetes.io", "k8s.io", karpv1.Group} {
		if inDomain(domain, restricted) {
			return fmt.Errorf("label %q is restricted: domain %q is reserved, only its well-known labels may be used", key, restricted)
		}
	}
	return nil
}

// inDomain reports whether domain is parent or one of its subdomains.
func inDomain(domain, parent string) bool {
	return domain == parent || strings.HasSuffix(domain, "."+parent)
}
