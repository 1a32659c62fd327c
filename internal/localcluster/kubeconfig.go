package localcluster

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// contextName names the cluster, user and context in the admin kubeconfig.
const contextName = "joinery-local"

// adminKubeconfig is a self-contained kubeconfig (certificates embedded) for the admin user.
func adminKubeconfig(server string, certs *pki) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{
		Server:                   server,
		CertificateAuthorityData: certs.caCertPEM,
	}
	cfg.AuthInfos[contextName] = &clientcmdapi.AuthInfo{
		ClientCertificateData: certs.adminCertPEM,
		ClientKeyData:         certs.adminKeyPEM,
	}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName}
	cfg.CurrentContext = contextName
	return cfg
}

// writeKubeconfig writes cfg to path and returns the matching REST config.
func writeKubeconfig(cfg *clientcmdapi.Config, path string) (*rest.Config, error) {
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return nil, fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	restConfig, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("REST config from kubeconfig: %w", err)
	}
	return restConfig, nil
}
