package version

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
)

// BuildInfo is Karpenter's karpenter_build_info: a constant 1 labelled with the build. Each
// binary registers it with the registry it serves.
var BuildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: "karpenter",
	Name:      "build_info",
	Help:      "A metric with a constant '1' value labeled by version from which karpenter was built.",
}, []string{"version", "goversion", "goarch", "commit"})

func init() {
	commit := Commit
	if commit == "" {
		commit = vcsRevision()
	}
	BuildInfo.WithLabelValues(Version, runtime.Version(), runtime.GOARCH, commit).Set(1)
}
