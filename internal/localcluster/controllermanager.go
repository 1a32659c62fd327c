package localcluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// controllers are the kube-controller-manager controllers the local cluster runs: what
// workloads, owner references, PDBs, nodes and volumes need. The volume controllers bind
// claims to volumes (pre-bound ones, and the ones kube-scheduler picks for a
// WaitForFirstConsumer class), guard volumes in use and create ephemeral volumes' claims;
// nothing provisions volumes, so a claim needs a volume created for it. Cloud, IPAM, attach
// and certificate controllers are left out; nothing here provides what they manage.
var controllers = []string{
	"garbage-collector-controller",
	"namespace-controller",
	"serviceaccount-controller", // creates `default` ServiceAccounts, without which pods are refused
	"serviceaccount-token-controller",
	"root-ca-certificate-publisher-controller",
	"replicaset-controller",
	"deployment-controller",
	"statefulset-controller",
	"daemonset-controller",
	"job-controller",
	"cronjob-controller",
	"ttl-after-finished-controller",
	"disruption-controller", // PDB status
	"node-lifecycle-controller",
	"taint-eviction-controller",
	"pod-garbage-collector-controller",
	"endpointslice-controller",
	"persistentvolume-binder-controller",
	"persistentvolume-protection-controller",
	"persistentvolumeclaim-protection-controller",
	"persistentvolume-expander-controller",
	"ephemeral-volume-controller",
}

// controllerManager runs kube-controller-manager as the admin user, serving /healthz on a free
// loopback port, with leader election off: it is the only instance.
func (c *Cluster) controllerManager() (component, error) {
	c.controllerManagerDir = filepath.Join(c.opts.Dir, string(ControllerManager))
	return component{
		name: string(ControllerManager),
		configure: func() ([]string, error) {
			port, err := freePort()
			if err != nil {
				return nil, err
			}
			c.kcmPort = port
			return []string{
				"--kubeconfig=" + c.kubeconfigPath,
				"--authentication-kubeconfig=" + c.kubeconfigPath,
				"--authorization-kubeconfig=" + c.kubeconfigPath,
				"--bind-address=127.0.0.1",
				"--secure-port=" + strconv.Itoa(port),
				"--cert-dir=" + c.controllerManagerDir,
				"--leader-elect=false",
				"--controllers=" + strings.Join(controllers, ","),
				"--service-account-private-key-file=" + c.certs.serviceAccountKey,
				"--root-ca-file=" + c.certs.caCert,
				"--cluster-name=" + contextName,
			}, nil
		},
		ready: func(ctx context.Context) error {
			return probeOK(ctx, loopbackHTTPS, fmt.Sprintf("https://127.0.0.1:%d/healthz", c.kcmPort))
		},
		ports: func() []int { return []int{c.kcmPort} },
	}, nil
}
