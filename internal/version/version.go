// Package version holds joinery's own version, stamped at build time by the Makefile with
// -ldflags "-X github.com/joinery-dev/joinery/internal/version.Version=...".
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is joinery's release (or `git describe`) version; "dev" in unstamped builds.
var Version = "dev"

// Commit is the git commit the binary was built from, when known.
var Commit = ""

// String is the one-line version a binary prints for --version.
func String(binary string) string {
	commit := Commit
	if commit == "" {
		commit = vcsRevision()
	}
	if commit == "" {
		commit = "unknown"
	}
	return fmt.Sprintf("%s %s (commit %s, kubernetes %s, %s %s/%s)",
		binary, Version, commit, KubernetesVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// KubernetesVersion is the version of the k8s.io/kubernetes module joinery is built on, or of
// client-go in binaries that do not link kube-scheduler.
func KubernetesVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	clientGo := ""
	for _, dep := range info.Deps {
		switch dep.Path {
		case "k8s.io/kubernetes":
			return dep.Version
		case "k8s.io/client-go":
			clientGo = "client-go " + dep.Version
			if dep.Replace != nil {
				clientGo = "client-go " + dep.Replace.Version
			}
		}
	}
	if clientGo != "" {
		return clientGo
	}
	return "unknown"
}

func vcsRevision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return ""
}
