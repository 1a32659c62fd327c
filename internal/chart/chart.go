// Package chart renders joinery's Helm chart (charts/joinery) the way `helm template` does,
// with the helm SDK: the one source of joinery's deployment. make generate writes
// manifests/deploy from it, and the local cluster runs joinery's binaries as the
// ServiceAccounts and with the roles it renders.
package chart

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
)

// Release is how manifests/deploy and the local cluster install the chart: release name
// joinery (objects joinery-scheduler, joinery-controller) in namespace joinery.
const (
	ReleaseName = "joinery"
	Namespace   = "joinery"
)

// DeployValues are the values manifests/deploy is rendered with: the kwok provider, the local
// images hack/kind loads, and the namespace created with its Pod Security labels.
func DeployValues() map[string]any {
	return map[string]any{
		"namespace":     map[string]any{"create": true},
		"cloudProvider": "kwok",
		"controller":    map[string]any{"image": map[string]any{"repository": "joinery-controller", "tag": "dev"}},
		"scheduler":     map[string]any{"image": map[string]any{"repository": "joinery-scheduler", "tag": "dev"}},
	}
}

// Dir is the chart's directory under the repository root.
func Dir(root string) string { return filepath.Join(root, "charts", "joinery") }

// File is one rendered template.
type File struct {
	// Name is the template's file name, e.g. rbac-scheduler.yaml.
	Name string
	// Manifest is its rendered YAML, documents separated by ---.
	Manifest string
}

// Render loads the chart in dir and renders it with values over its defaults, for
// ReleaseName in namespace, after validating the merged values against values.schema.json.
// Files come back in name order; templates that render to nothing are left out.
func Render(dir, namespace string, values map[string]any) ([]File, error) {
	c, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", dir, err)
	}
	return RenderChart(c, namespace, values)
}

// RenderChart is Render for a loaded chart.
func RenderChart(c *chart.Chart, namespace string, values map[string]any) ([]File, error) {
	if values == nil {
		values = map[string]any{}
	}
	top, err := chartutil.ToRenderValues(c, values, chartutil.ReleaseOptions{
		Name: ReleaseName, Namespace: namespace, Revision: 1, IsInstall: true,
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("values of chart %s: %w", c.Name(), err)
	}
	rendered, err := engine.Render(c, top)
	if err != nil {
		return nil, fmt.Errorf("render chart %s: %w", c.Name(), err)
	}
	var files []File
	for name, manifest := range rendered {
		base := path.Base(name)
		if !strings.HasSuffix(base, ".yaml") || strings.TrimSpace(stripComments(manifest)) == "" {
			continue // helpers, NOTES.txt, and templates switched off by values
		}
		files = append(files, File{Name: base, Manifest: manifest})
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	return files, nil
}

// Join concatenates files' manifests into one multi-document YAML.
func Join(files []File) string {
	var b strings.Builder
	for _, f := range files {
		b.WriteString("---\n# Source: " + f.Name + "\n")
		b.WriteString(strings.TrimLeft(f.Manifest, "-\n"))
		if !strings.HasSuffix(f.Manifest, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// stripComments drops comment lines and document separators, so a template that renders
// only a comment counts as empty.
func stripComments(manifest string) string {
	var b strings.Builder
	for line := range strings.Lines(manifest) {
		t := strings.TrimSpace(line)
		if t == "" || t == "---" || strings.HasPrefix(t, "#") {
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}
