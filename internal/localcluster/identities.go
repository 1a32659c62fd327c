package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/joinery-dev/joinery/internal/chart"
)

// ControllerNamespace is where joinery runs when Options.ChartDir is set, as the chart
// installs it: the namespace of its ServiceAccounts, joinery-controller's Lease and the
// unavailable-offerings ConfigMap.
const ControllerNamespace = chart.Namespace

// identityFiles are the chart's objects that make joinery's identities: its namespace,
// ServiceAccounts, roles and the admission policy that narrows them. The Deployments and the
// rest are for a real cluster.
var identityFiles = []string{"namespace.yaml", "serviceaccounts.yaml", "rbac-scheduler.yaml", "rbac-controller.yaml", "validatingadmissionpolicy.yaml"}

// tokenLifetime is how long the ServiceAccount tokens in the binaries' kubeconfigs last: a
// `make cluster` left running for days outlives it, a test run never does.
const tokenLifetime = 7 * 24 * time.Hour

// installIdentities applies the chart's ServiceAccounts and roles for the cluster's cloud
// provider and writes a kubeconfig per joinery binary holding its ServiceAccount's token
// (TokenRequest API), so the binaries run with exactly the permissions the chart grants and
// a missing one fails like in a real cluster.
func (c *Cluster) installIdentities(ctx context.Context) error {
	files, err := chart.Render(c.opts.ChartDir, chart.Namespace, map[string]any{
		"namespace":     map[string]any{"create": true},
		"cloudProvider": c.CloudProvider(),
	})
	if err != nil {
		return fmt.Errorf("joinery's identities: %w", err)
	}
	applier, err := NewApplier(c.restConfig)
	if err != nil {
		return err
	}
	for _, name := range identityFiles {
		i := slices.IndexFunc(files, func(f chart.File) bool { return f.Name == name })
		if i < 0 {
			return fmt.Errorf("joinery's identities: the chart rendered no %s", name)
		}
		if err := applier.Apply(ctx, []byte(files[i].Manifest), false); err != nil {
			return fmt.Errorf("joinery's identities: %s: %w", name, err)
		}
	}
	dir := c.identitiesDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create identities dir: %w", err)
	}
	client, err := kubernetes.NewForConfig(c.restConfig)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	c.kubeconfigs = map[Component]string{}
	for _, comp := range []Component{JoineryScheduler, JoineryController} {
		token, err := client.CoreV1().ServiceAccounts(chart.Namespace).CreateToken(ctx, string(comp), &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(tokenLifetime.Seconds()))},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("token of ServiceAccount %s/%s: %w", chart.Namespace, comp, err)
		}
		path := filepath.Join(dir, string(comp)+".kubeconfig")
		if _, err := writeKubeconfig(tokenKubeconfig(c.restConfig.Host, c.certs, token.Status.Token), path); err != nil {
			return err
		}
		c.kubeconfigs[comp] = path
	}
	c.log.Info("joinery runs as its ServiceAccounts", "namespace", chart.Namespace, "chart", c.opts.ChartDir)
	return nil
}

// tokenKubeconfig is a kubeconfig that authenticates with a bearer token.
func tokenKubeconfig(server string, certs *pki, token string) *clientcmdapi.Config {
	cfg := adminKubeconfig(server, certs)
	cfg.AuthInfos[contextName] = &clientcmdapi.AuthInfo{Token: token}
	return cfg
}

func (c *Cluster) identitiesDir() string { return filepath.Join(c.opts.Dir, "identities") }

// kubeconfigOf is the kubeconfig comp runs with: its ServiceAccount's with Options.ChartDir,
// else the admin's.
func (c *Cluster) kubeconfigOf(comp Component) string {
	if path, ok := c.kubeconfigs[comp]; ok {
		return path
	}
	return c.kubeconfigPath
}

// KubeconfigOf is the kubeconfig joinery-scheduler or joinery-controller runs with: a
// ServiceAccount's token with Options.ChartDir, else the admin's. Tests use it to act as the
// binary, e.g. to show what it may not do.
func (c *Cluster) KubeconfigOf(comp Component) string { return c.kubeconfigOf(comp) }

// ControllerNamespace is where joinery-controller keeps its Lease and ConfigMaps:
// ControllerNamespace with Options.ChartDir, else kube-system.
func (c *Cluster) ControllerNamespace() string {
	if c.opts.ChartDir != "" {
		return ControllerNamespace
	}
	return metav1.NamespaceSystem
}

// runsJoinery reports whether the cluster runs joinery-scheduler or joinery-controller.
func (c *Cluster) runsJoinery() bool {
	return slices.Contains(c.opts.Components, JoineryScheduler) || slices.Contains(c.opts.Components, JoineryController)
}
