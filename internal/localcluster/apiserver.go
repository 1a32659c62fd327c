package localcluster

import (
	"context"
	"fmt"
	"strconv"

	"k8s.io/client-go/kubernetes"
)

// serviceAccountIssuer is the issuer of service-account tokens, as on a kubeadm cluster.
const serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// kubeAPIServer runs kube-apiserver on a free loopback port, backed by the cluster's etcd,
// authenticating clients by certificate and authorizing with RBAC.
func (c *Cluster) kubeAPIServer() component {
	return component{
		name: "kube-apiserver",
		configure: func() ([]string, error) {
			port, err := freePort()
			if err != nil {
				return nil, err
			}
			c.apiserverPort = port
			server := "https://127.0.0.1:" + strconv.Itoa(port)
			if c.restConfig, err = writeKubeconfig(adminKubeconfig(server, c.certs), c.kubeconfigPath); err != nil {
				return nil, err
			}
			return []string{
				"--bind-address=127.0.0.1",
				"--advertise-address=127.0.0.1",
				"--secure-port=" + strconv.Itoa(port),
				"--etcd-servers=" + c.etcdURL(),
				// Unused while the serving certificate is given, but keeps the default
				// (/var/run/kubernetes) out of reach.
				"--cert-dir=" + c.apiserverCertDir(),
				"--tls-cert-file=" + c.certs.servingCert,
				"--tls-private-key-file=" + c.certs.servingKey,
				"--client-ca-file=" + c.certs.caCert,
				"--service-account-key-file=" + c.certs.serviceAccountPub,
				"--service-account-signing-key-file=" + c.certs.serviceAccountKey,
				"--service-account-issuer=" + serviceAccountIssuer,
				"--authorization-mode=RBAC",
				// As on EKS and kubeadm clusters: an ownerReference that blocks its owner's
				// deletion needs update on the owner's finalizers, which the chart grants.
				"--enable-admission-plugins=OwnerReferencesPermissionEnforcement",
				"--service-cluster-ip-range=" + serviceCIDR,
				"--allow-privileged=true",
				// Fairness queues only slow a single-user test cluster down.
				"--enable-priority-and-fairness=false",
			}, nil
		},
		ready: c.apiserverReady,
		ports: func() []int { return []int{c.apiserverPort} },
	}
}

// apiserverReady asks /readyz as the admin user: ok once etcd is reachable and every
// post-start hook (bootstrap RBAC, CRD informers, ...) has finished.
func (c *Cluster) apiserverReady(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(c.restConfig)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("/readyz: %w: %s", err, body)
	}
	if string(body) != "ok" {
		return fmt.Errorf("/readyz answered %q", body)
	}
	return nil
}
