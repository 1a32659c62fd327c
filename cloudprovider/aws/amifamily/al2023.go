package amifamily

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
)

const (
	nodeConfigAPIGroup  = "node.eks.aws"
	nodeConfigAPI       = nodeConfigAPIGroup + "/v1alpha1"
	nodeConfigKind      = "NodeConfig"
	nodeConfigMediaType = "application/node.eks.aws"
	// generatedNodeConfigComment marks joinery's NodeConfig, with the wording Karpenter uses.
	generatedNodeConfigComment = "# Karpenter Generated NodeConfig\n"
)

// al2023 bootstraps through nodeadm: the user's parts, then joinery's NodeConfig. nodeadm
// merges NodeConfigs in order, so joinery's values override the user's.
type al2023 struct{}

func (al2023) userData(in Input) ([]byte, error) {
	parts, err := userParts(in.UserData, al2023Part)
	if err != nil {
		return nil, err
	}
	// The user's NodeConfigs go first, keeping their order, as in the docs' merged example.
	slices.SortStableFunc(parts, func(a, b mimePart) int {
		return boolRank(a.contentType() != nodeConfigMediaType) - boolRank(b.contentType() != nodeConfigMediaType)
	})
	config, err := al2023NodeConfig(in)
	if err != nil {
		return nil, err
	}
	generated, err := yaml.Marshal(config)
	if err != nil {
		return nil, fmt.Errorf("encoding NodeConfig: %w", err)
	}
	own := mimePart{header: []string{nodeConfigContentType}, body: generatedNodeConfigComment + string(generated)}
	return writeMIME(append(parts, own)), nil
}

// al2023Part makes a MIME part of non-MIME user data: a NodeConfig document or a shell script.
func al2023Part(content string) mimePart {
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if yaml.Unmarshal([]byte(content), &meta) == nil && meta.Kind == nodeConfigKind &&
		strings.HasPrefix(meta.APIVersion, nodeConfigAPIGroup+"/") {
		return mimePart{header: []string{nodeConfigContentType}, body: content}
	}
	return shellPart(content)
}

// al2023NodeConfig is joinery's NodeConfig as a map, so that it encodes with sorted keys.
func al2023NodeConfig(in Input) (map[string]any, error) {
	cluster := map[string]any{"name": in.Cluster.Name}
	for key, value := range map[string]string{
		"apiServerEndpoint":    in.Cluster.Endpoint,
		"certificateAuthority": in.Cluster.CABundle,
		"cidr":                 in.Cluster.ServiceCIDR,
	} {
		if value != "" {
			cluster[key] = value
		}
	}
	spec := map[string]any{"cluster": cluster}

	config := map[string]any{}
	if dns := in.clusterDNS(); len(dns) > 0 {
		config["clusterDNS"] = dns
	}
	if in.MaxPods > 0 {
		config["maxPods"] = in.MaxPods
	}
	k := in.kubelet()
	k.MaxPods, k.ClusterDNS = nil, nil
	// spec.kubelet uses KubeletConfiguration's own field names, so its JSON is the config's.
	settings, err := json.Marshal(k)
	if err != nil {
		return nil, fmt.Errorf("encoding spec.kubelet: %w", err)
	}
	var fields map[string]any
	if err := json.Unmarshal(settings, &fields); err != nil {
		return nil, fmt.Errorf("encoding spec.kubelet: %w", err)
	}
	for key, value := range fields {
		config[key] = value
	}
	kubelet := map[string]any{}
	if len(config) > 0 {
		kubelet["config"] = config
	}
	if flags := registrationFlags(in, true); len(flags) > 0 {
		kubelet["flags"] = flags
	}
	if len(kubelet) > 0 {
		spec["kubelet"] = kubelet
	}
	if in.raid0() {
		spec["instance"] = map[string]any{"localStorage": map[string]any{"strategy": string(awsv1.InstanceStorePolicyRAID0)}}
	}
	return map[string]any{"apiVersion": nodeConfigAPI, "kind": nodeConfigKind, "spec": spec}, nil
}

// nodeConfig is the part of a NodeConfig that Parse reads.
type nodeConfig struct {
	Spec struct {
		Cluster struct {
			Name                 string `json:"name"`
			APIServerEndpoint    string `json:"apiServerEndpoint"`
			CertificateAuthority string `json:"certificateAuthority"`
			CIDR                 string `json:"cidr"`
		} `json:"cluster"`
		Kubelet struct {
			Config struct {
				awsv1.KubeletConfiguration
				RegisterWithTaints []corev1.Taint `json:"registerWithTaints,omitempty"`
			} `json:"config"`
			Flags []string `json:"flags"`
		} `json:"kubelet"`
		Instance struct {
			LocalStorage struct {
				Strategy string `json:"strategy"`
			} `json:"localStorage"`
		} `json:"instance"`
	} `json:"spec"`
}

var yamlDocumentSeparator = regexp.MustCompile(`(?m)^---[ \t]*\r?$`)

func (al2023) parse(userData []byte) (NodeBootstrap, error) {
	parts, isMIME, err := parseMIME(string(userData))
	if err != nil {
		return NodeBootstrap{}, fmt.Errorf("parsing MIME user data: %w", err)
	}
	if !isMIME {
		parts = []mimePart{al2023Part(string(userData))}
	}
	// nodeadm applies the NodeConfigs in order: later values override, kubelet flags add up.
	merged := map[string]any{}
	found := false
	for _, p := range parts {
		if p.contentType() != nodeConfigMediaType {
			continue
		}
		for _, doc := range yamlDocumentSeparator.Split(p.body, -1) {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
				return NodeBootstrap{}, fmt.Errorf("parsing NodeConfig: %w", err)
			}
			if m == nil || m["kind"] != nodeConfigKind {
				continue
			}
			mergeNodeConfig(merged, m, "")
			found = true
		}
	}
	if !found {
		return NodeBootstrap{}, fmt.Errorf("user data has no NodeConfig")
	}
	raw, err := json.Marshal(merged)
	if err != nil {
		return NodeBootstrap{}, fmt.Errorf("encoding merged NodeConfig: %w", err)
	}
	var nc nodeConfig
	if err := json.Unmarshal(raw, &nc); err != nil {
		return NodeBootstrap{}, fmt.Errorf("reading merged NodeConfig: %w", err)
	}
	config := nc.Spec.Kubelet.Config
	b := NodeBootstrap{
		ClusterName:       nc.Spec.Cluster.Name,
		APIServerEndpoint: nc.Spec.Cluster.APIServerEndpoint,
		CABundle:          nc.Spec.Cluster.CertificateAuthority,
		ClusterDNS:        config.ClusterDNS,
		Taints:            config.RegisterWithTaints,
		Kubelet:           config.KubeletConfiguration,
		RAID0:             strings.EqualFold(nc.Spec.Instance.LocalStorage.Strategy, string(awsv1.InstanceStorePolicyRAID0)),
	}
	if config.MaxPods != nil {
		b.MaxPods = *config.MaxPods
	}
	b.Kubelet.MaxPods, b.Kubelet.ClusterDNS = nil, nil
	// Flags override the config file, as they do for kubelet.
	for _, flag := range nc.Spec.Kubelet.Flags {
		words, err := shellWords(flag)
		if err != nil {
			return NodeBootstrap{}, fmt.Errorf("reading kubelet flag %q: %w", flag, err)
		}
		if err := applyKubeletFlags(words, &b); err != nil {
			return NodeBootstrap{}, err
		}
	}
	return b, nil
}

// mergeNodeConfig merges src into dst: maps deeply, spec.kubelet.flags appended, anything else
// replaced.
func mergeNodeConfig(dst, src map[string]any, path string) {
	for key, value := range src {
		at := path + "." + key
		if sub, ok := value.(map[string]any); ok {
			if existing, ok := dst[key].(map[string]any); ok {
				mergeNodeConfig(existing, sub, at)
				continue
			}
		}
		if list, ok := value.([]any); ok && at == ".spec.kubelet.flags" {
			existing, _ := dst[key].([]any)
			dst[key] = append(existing, list...)
			continue
		}
		dst[key] = value
	}
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
