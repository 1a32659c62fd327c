package amifamily

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// registrationFlags are kubelet's --node-labels and --register-with-taints. quote wraps each list
// in double quotes, the layout of the Windows and AL2023 bootstraps.
func registrationFlags(in Input, quote bool) []string {
	q := func(s string) string {
		if quote {
			return `"` + s + `"`
		}
		return s
	}
	var flags []string
	if len(in.Labels) > 0 {
		flags = append(flags, "--node-labels="+q(joinPairs(in.Labels, "=")))
	}
	if len(in.Taints) > 0 {
		taints := make([]string, len(in.Taints))
		for i, t := range in.Taints {
			taints[i] = formatTaint(t)
		}
		flags = append(flags, "--register-with-taints="+q(strings.Join(taints, ",")))
	}
	return flags
}

// settingFlags are max pods and the spec.kubelet settings as kubelet flags, for families whose
// bootstrap takes extra kubelet arguments (AL2, Windows).
func settingFlags(in Input) []string {
	var flags []string
	add := func(name, value string) { flags = append(flags, "--"+name+"="+value) }
	if in.MaxPods > 0 {
		add("max-pods", strconv.Itoa(int(in.MaxPods)))
	}
	k := in.kubelet()
	if k.PodsPerCore != nil {
		add("pods-per-core", strconv.Itoa(int(*k.PodsPerCore)))
	}
	if len(k.SystemReserved) > 0 {
		add("system-reserved", joinPairs(k.SystemReserved, "="))
	}
	if len(k.KubeReserved) > 0 {
		add("kube-reserved", joinPairs(k.KubeReserved, "="))
	}
	if len(k.EvictionHard) > 0 {
		add("eviction-hard", joinPairs(k.EvictionHard, "<"))
	}
	if len(k.EvictionSoft) > 0 {
		add("eviction-soft", joinPairs(k.EvictionSoft, "<"))
	}
	if len(k.EvictionSoftGracePeriod) > 0 {
		add("eviction-soft-grace-period", joinPairs(durations(k.EvictionSoftGracePeriod), "="))
	}
	if k.EvictionMaxPodGracePeriod != nil {
		add("eviction-max-pod-grace-period", strconv.Itoa(int(*k.EvictionMaxPodGracePeriod)))
	}
	if k.ImageGCHighThresholdPercent != nil {
		add("image-gc-high-threshold", strconv.Itoa(int(*k.ImageGCHighThresholdPercent)))
	}
	if k.ImageGCLowThresholdPercent != nil {
		add("image-gc-low-threshold", strconv.Itoa(int(*k.ImageGCLowThresholdPercent)))
	}
	if k.CPUCFSQuota != nil {
		add("cpu-cfs-quota", strconv.FormatBool(*k.CPUCFSQuota))
	}
	return flags
}

func durations(m map[string]metav1.Duration) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v.Duration.String()
	}
	return out
}

// joinPairs writes m as k<sep>v pairs, sorted by key, separated by commas.
func joinPairs(m map[string]string, sep string) string {
	pairs := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		pairs = append(pairs, k+sep+m[k])
	}
	return strings.Join(pairs, ",")
}

func formatTaint(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

func parseTaint(s string) (corev1.Taint, error) {
	kv, effect, ok := strings.Cut(s, ":")
	if !ok || effect == "" {
		return corev1.Taint{}, fmt.Errorf("taint %q has no effect", s)
	}
	key, value, _ := strings.Cut(kv, "=")
	if key == "" {
		return corev1.Taint{}, fmt.Errorf("taint %q has no key", s)
	}
	return corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)}, nil
}

// splitPairs reads k<sep>v pairs separated by commas.
func splitPairs(s, sep string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	for _, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(pair, sep)
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not of the form key%svalue", pair, sep)
		}
		out[k] = v
	}
	return out, nil
}

// applyKubeletFlags applies kubelet command-line flags to b; a later flag overrides an earlier
// one, as with kubelet itself. Flags joinery never writes are ignored.
func applyKubeletFlags(words []string, b *NodeBootstrap) error {
	for i := 0; i < len(words); i++ {
		if !strings.HasPrefix(words[i], "--") {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(words[i], "--"), "=")
		switch {
		case hasValue:
		case i+1 < len(words) && !strings.HasPrefix(words[i+1], "-"):
			i++
			value = words[i]
		default:
			// A flag standing alone is a boolean switched on.
			value = "true"
		}
		if err := applyKubeletFlag(name, value, b); err != nil {
			return fmt.Errorf("kubelet flag --%s: %w", name, err)
		}
	}
	return nil
}

func applyKubeletFlag(name, value string, b *NodeBootstrap) error {
	var err error
	k := &b.Kubelet
	int32Flag := func(dst **int32) {
		var n int
		if n, err = strconv.Atoi(value); err == nil {
			*dst = ptr.To(int32(n))
		}
	}
	switch name {
	case "node-labels":
		b.Labels, err = splitPairs(value, "=")
	case "register-with-taints":
		b.Taints = nil
		for _, s := range strings.Split(value, ",") {
			if s == "" {
				continue
			}
			var t corev1.Taint
			if t, err = parseTaint(s); err != nil {
				return err
			}
			b.Taints = append(b.Taints, t)
		}
	case "max-pods":
		var n int
		if n, err = strconv.Atoi(value); err == nil {
			b.MaxPods = int32(n)
		}
	case "cluster-dns":
		b.ClusterDNS = strings.Split(value, ",")
	case "pods-per-core":
		int32Flag(&k.PodsPerCore)
	case "system-reserved":
		k.SystemReserved, err = splitPairs(value, "=")
	case "kube-reserved":
		k.KubeReserved, err = splitPairs(value, "=")
	case "eviction-hard":
		k.EvictionHard, err = splitPairs(value, "<")
	case "eviction-soft":
		k.EvictionSoft, err = splitPairs(value, "<")
	case "eviction-soft-grace-period":
		k.EvictionSoftGracePeriod, err = parseDurations(value)
	case "eviction-max-pod-grace-period":
		int32Flag(&k.EvictionMaxPodGracePeriod)
	case "image-gc-high-threshold":
		int32Flag(&k.ImageGCHighThresholdPercent)
	case "image-gc-low-threshold":
		int32Flag(&k.ImageGCLowThresholdPercent)
	case "cpu-cfs-quota":
		var v bool
		if v, err = strconv.ParseBool(value); err == nil {
			k.CPUCFSQuota = &v
		}
	}
	return err
}

func parseDurations(s string) (map[string]metav1.Duration, error) {
	pairs, err := splitPairs(s, "=")
	if err != nil {
		return nil, err
	}
	return durationMap(pairs)
}

func durationMap(pairs map[string]string) (map[string]metav1.Duration, error) {
	out := make(map[string]metav1.Duration, len(pairs))
	for k, v := range pairs {
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = metav1.Duration{Duration: d}
	}
	return out, nil
}

// sortTaints orders taints by key, then effect, then value.
func sortTaints(taints []corev1.Taint) {
	slices.SortFunc(taints, func(a, b corev1.Taint) int {
		return strings.Compare(a.Key+"\x00"+string(a.Effect)+"\x00"+a.Value, b.Key+"\x00"+string(b.Effect)+"\x00"+b.Value)
	})
}
