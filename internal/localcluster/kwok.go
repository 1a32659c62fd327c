package localcluster

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/discovery"
)

// KwokNodeAnnotation marks the nodes kwok manages: the annotation Karpenter's kwok provider
// puts on the nodes it creates, and what a test puts on a node it creates by hand.
const (
	KwokNodeAnnotation      = "kwok.x-k8s.io/node"
	KwokNodeAnnotationValue = "fake"
)

// kwokStages is joinery's own stage configuration: managed nodes become Ready, their pods
// Running with IPs, and terminating pods go away.
//
//go:embed kwok-stages.yaml
var kwokStages []byte

// kwokPodCIDR is where kwok allocates pod IPs; it must not overlap serviceCIDR.
const kwokPodCIDR = "10.244.0.0/16"

// kwokNodeIP is the InternalIP every kwok node reports; nothing connects to it.
const kwokNodeIP = "10.255.0.1"

// kwok runs the kwok controller against the cluster, serving /healthz on a free port.
func (c *Cluster) kwok() (component, error) {
	c.kwokDir = filepath.Join(c.opts.Dir, string(Kwok))
	if err := os.MkdirAll(c.kwokDir, 0o755); err != nil {
		return component{}, fmt.Errorf("create kwok dir: %w", err)
	}
	version, err := c.serverVersion()
	if err != nil {
		return component{}, err
	}
	// Nodes report the cluster's own version as their kubelet's, as on a real cluster.
	stages := bytes.ReplaceAll(kwokStages, []byte("KUBE_VERSION"), []byte(strconv.Quote(version)))
	stagesPath := filepath.Join(c.kwokDir, "stages.yaml")
	if err := os.WriteFile(stagesPath, stages, 0o644); err != nil {
		return component{}, fmt.Errorf("write kwok stages: %w", err)
	}
	return component{
		name: string(Kwok),
		configure: func() ([]string, error) {
			port, err := freePort()
			if err != nil {
				return nil, err
			}
			c.kwokPort = port
			return []string{
				"--kubeconfig=" + c.kubeconfigPath,
				"--config=" + stagesPath,
				"--manage-all-nodes=false",
				"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=" + KwokNodeAnnotationValue,
				"--server-address=127.0.0.1:" + strconv.Itoa(port),
				"--cidr=" + kwokPodCIDR,
				"--node-ip=" + kwokNodeIP,
			}, nil
		},
		ready: func(ctx context.Context) error {
			return probeOK(ctx, http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/healthz", c.kwokPort))
		},
		ports: func() []int { return []int{c.kwokPort} },
	}, nil
}

// serverVersion is kube-apiserver's version, e.g. v1.36.3.
func (c *Cluster) serverVersion() (string, error) {
	client, err := discovery.NewDiscoveryClientForConfig(c.restConfig)
	if err != nil {
		return "", fmt.Errorf("discovery client: %w", err)
	}
	info, err := client.ServerVersion()
	if err != nil {
		return "", fmt.Errorf("server version: %w", err)
	}
	return info.GitVersion, nil
}
