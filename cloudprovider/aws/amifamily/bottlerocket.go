package amifamily

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// bottlerocket merges the user's TOML settings under joinery's settings.kubernetes.
type bottlerocket struct{}

// bottlerocketKubernetesSettings are the settings.kubernetes keys Bottlerocket defines; any other
// key under settings.kubernetes is dropped, as the EC2NodeClass docs describe.
var bottlerocketKubernetesSettings = map[string]bool{
	"allowed-unsafe-sysctls": true, "api-server": true, "authentication-mode": true,
	"bootstrap-token": true, "cloud-provider": true, "cluster-certificate": true,
	"cluster-dns-ip": true, "cluster-domain": true, "cluster-name": true,
	"container-log-max-files": true, "container-log-max-size": true,
	"cpu-cfs-quota-enforced": true, "cpu-manager-policy": true, "cpu-manager-policy-options": true,
	"cpu-manager-reconcile-period": true, "credential-providers": true,
	"device-ownership-from-security-context": true, "event-burst": true, "event-qps": true,
	"eviction-hard": true, "eviction-max-pod-grace-period": true, "eviction-soft": true,
	"eviction-soft-grace-period": true, "hostname-override": true, "hostname-override-source": true,
	"image-gc-high-threshold-percent": true, "image-gc-low-threshold-percent": true,
	"image-maximum-gc-age": true, "image-minimum-gc-age": true, "kube-api-burst": true,
	"kube-api-qps": true, "kube-reserved": true, "log-level": true, "max-parallel-image-pulls": true,
	"max-pods": true, "memory-manager-policy": true, "memory-manager-reserved-memory": true,
	"node-labels": true, "node-taints": true, "pod-infra-container-image": true,
	"pod-pids-limit": true, "provider-id": true, "registry-burst": true, "registry-qps": true,
	"seccomp-default": true, "server-certificate": true, "server-key": true,
	"server-tls-bootstrap": true, "shutdown-grace-period": true,
	"shutdown-grace-period-for-critical-pods": true, "single-process-oom-kill": true,
	"standalone-mode": true, "static-pods": true, "system-reserved": true,
	"topology-manager-policy": true, "topology-manager-scope": true,
}

// bottlerocketKeyOrder writes joinery's settings first, in the order the docs show them.
func bottlerocketKeyOrder(path []string) []string {
	switch {
	case slices.Equal(path, []string{"settings"}):
		return []string{"kubernetes"}
	case slices.Equal(path, []string{"settings", "kubernetes"}):
		return []string{"api-server", "cluster-certificate", "cluster-name", "cluster-dns-ip", "max-pods", "node-labels", "node-taints"}
	}
	return nil
}

func (bottlerocket) userData(in Input) ([]byte, error) {
	doc := map[string]any{}
	if in.UserData != "" {
		var err error
		if doc, err = decodeTOML([]byte(in.UserData)); err != nil {
			return nil, fmt.Errorf("parsing Bottlerocket user data: %w", err)
		}
	}
	settings, err := table(doc, "settings")
	if err != nil {
		return nil, err
	}
	userKubernetes, err := table(settings, "kubernetes")
	if err != nil {
		return nil, err
	}
	kubernetes := map[string]any{}
	for key, value := range userKubernetes {
		if bottlerocketKubernetesSettings[key] {
			kubernetes[key] = value
		}
	}
	maps.Copy(kubernetes, bottlerocketSettings(in))
	settings["kubernetes"] = kubernetes
	// Only settings is Bottlerocket's; other top-level keys are dropped.
	return encodeTOML(map[string]any{"settings": settings}, bottlerocketKeyOrder)
}

// bottlerocketSettings are joinery's settings.kubernetes values, which win over the user's.
func bottlerocketSettings(in Input) map[string]any {
	s := map[string]any{
		"cluster-name": in.Cluster.Name,
		"node-labels":  stringTable(in.Labels),
	}
	if in.Cluster.Endpoint != "" {
		s["api-server"] = in.Cluster.Endpoint
	}
	if in.Cluster.CABundle != "" {
		s["cluster-certificate"] = in.Cluster.CABundle
	}
	switch dns := in.clusterDNS(); len(dns) {
	case 0:
	case 1:
		s["cluster-dns-ip"] = dns[0]
	default:
		s["cluster-dns-ip"] = anySlice(dns)
	}
	if in.MaxPods > 0 {
		s["max-pods"] = int64(in.MaxPods)
	}
	taints := map[string]any{}
	for _, t := range in.Taints {
		existing, _ := taints[t.Key].([]any)
		taints[t.Key] = append(existing, t.Value+":"+string(t.Effect))
	}
	s["node-taints"] = taints

	// Bottlerocket has no pods-per-core setting; MaxPods already accounts for podsPerCore.
	k := in.kubelet()
	for key, value := range map[string]map[string]string{
		"system-reserved": k.SystemReserved,
		"kube-reserved":   k.KubeReserved,
		"eviction-hard":   k.EvictionHard,
		"eviction-soft":   k.EvictionSoft,
	} {
		if len(value) > 0 {
			s[key] = stringTable(value)
		}
	}
	if len(k.EvictionSoftGracePeriod) > 0 {
		s["eviction-soft-grace-period"] = stringTable(durations(k.EvictionSoftGracePeriod))
	}
	for key, value := range map[string]*int32{
		"eviction-max-pod-grace-period":   k.EvictionMaxPodGracePeriod,
		"image-gc-high-threshold-percent": k.ImageGCHighThresholdPercent,
		"image-gc-low-threshold-percent":  k.ImageGCLowThresholdPercent,
	} {
		if value != nil {
			s[key] = int64(*value)
		}
	}
	if k.CPUCFSQuota != nil {
		s["cpu-cfs-quota-enforced"] = *k.CPUCFSQuota
	}
	return s
}

func stringTable(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// table returns doc[key] as a table, creating it when absent.
func table(doc map[string]any, key string) (map[string]any, error) {
	switch v := doc[key].(type) {
	case nil:
		t := map[string]any{}
		doc[key] = t
		return t, nil
	case map[string]any:
		return v, nil
	default:
		return nil, fmt.Errorf("Bottlerocket user data: %s is a %T, not a table", key, v)
	}
}

func (bottlerocket) parse(userData []byte) (NodeBootstrap, error) {
	doc, err := decodeTOML(userData)
	if err != nil {
		return NodeBootstrap{}, fmt.Errorf("parsing Bottlerocket user data: %w", err)
	}
	settings, err := table(doc, "settings")
	if err != nil {
		return NodeBootstrap{}, err
	}
	s, err := table(settings, "kubernetes")
	if err != nil {
		return NodeBootstrap{}, err
	}
	r := settingsReader{s: s}
	b := NodeBootstrap{
		ClusterName:       r.str("cluster-name"),
		APIServerEndpoint: r.str("api-server"),
		CABundle:          r.str("cluster-certificate"),
		ClusterDNS:        r.strings("cluster-dns-ip"),
		Labels:            r.strMap("node-labels"),
		MaxPods:           r.int32("max-pods"),
	}
	if raw, ok := s["node-taints"].(map[string]any); ok {
		for key, values := range raw {
			list, ok := values.([]any)
			if !ok {
				list = []any{values}
			}
			for _, v := range list {
				text, _ := v.(string)
				t, err := parseTaint(key + "=" + text)
				if err != nil {
					return NodeBootstrap{}, fmt.Errorf("settings.kubernetes.node-taints: %w", err)
				}
				b.Taints = append(b.Taints, t)
			}
		}
	}
	k := &b.Kubelet
	k.SystemReserved = r.strMap("system-reserved")
	k.KubeReserved = r.strMap("kube-reserved")
	k.EvictionHard = r.strMap("eviction-hard")
	k.EvictionSoft = r.strMap("eviction-soft")
	if grace := r.strMap("eviction-soft-grace-period"); grace != nil {
		if k.EvictionSoftGracePeriod, err = durationMap(grace); err != nil {
			return NodeBootstrap{}, fmt.Errorf("settings.kubernetes.eviction-soft-grace-period: %w", err)
		}
	}
	k.EvictionMaxPodGracePeriod = r.int32Ptr("eviction-max-pod-grace-period")
	k.ImageGCHighThresholdPercent = r.int32Ptr("image-gc-high-threshold-percent")
	k.ImageGCLowThresholdPercent = r.int32Ptr("image-gc-low-threshold-percent")
	if v, ok := s["cpu-cfs-quota-enforced"].(bool); ok {
		k.CPUCFSQuota = &v
	}
	return b, r.err
}

// settingsReader reads typed values out of settings.kubernetes, keeping the first error.
type settingsReader struct {
	s   map[string]any
	err error
}

func (r *settingsReader) fail(key string, v any, want string) {
	if r.err == nil {
		r.err = fmt.Errorf("settings.kubernetes.%s is %T, want %s", key, v, want)
	}
}

func (r *settingsReader) str(key string) string {
	switch v := r.s[key].(type) {
	case nil:
	case string:
		return v
	default:
		r.fail(key, v, "a string")
	}
	return ""
}

// strings reads a string or a list of strings.
func (r *settingsReader) strings(key string) []string {
	switch v := r.s[key].(type) {
	case nil:
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, item := range v {
			s, ok := item.(string)
			if !ok {
				r.fail(key, item, "a list of strings")
				return nil
			}
			out = append(out, s)
		}
		return out
	default:
		r.fail(key, v, "a string or a list of strings")
	}
	return nil
}

func (r *settingsReader) strMap(key string) map[string]string {
	switch v := r.s[key].(type) {
	case nil:
	case map[string]any:
		out := make(map[string]string, len(v))
		for k, item := range v {
			s, ok := item.(string)
			if !ok {
				r.fail(key+"."+k, item, "a string")
				return nil
			}
			out[k] = s
		}
		return out
	default:
		r.fail(key, v, "a table")
	}
	return nil
}

// int32Ptr reads an integer, also accepted as a string of digits as Bottlerocket does.
func (r *settingsReader) int32Ptr(key string) *int32 {
	var n int64
	switch v := r.s[key].(type) {
	case nil:
		return nil
	case int64:
		n = v
	case string:
		parsed, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			r.fail(key, v, "an integer")
			return nil
		}
		n = parsed
	default:
		r.fail(key, v, "an integer")
		return nil
	}
	out := int32(n)
	return &out
}

func (r *settingsReader) int32(key string) int32 {
	if p := r.int32Ptr(key); p != nil {
		return *p
	}
	return 0
}
