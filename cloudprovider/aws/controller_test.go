package aws

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/joinery-dev/joinery/cloudprovider/aws/amifamily"
)

func TestClusterInfo(t *testing.T) {
	const pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, []byte(pem), 0o600); err != nil {
		t.Fatal(err)
	}
	kubeDNSService := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns"},
		Spec:       corev1.ServiceSpec{ClusterIP: "172.20.0.10"},
	}
	headless := kubeDNSService.DeepCopy()
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	encoded := base64.StdEncoding.EncodeToString([]byte(pem))

	cases := []struct {
		name     string
		config   rest.Config
		objects  []client.Object
		settings Settings
		want     amifamily.Cluster
	}{
		{
			name:     "defaults from the kubeconfig and kube-dns",
			config:   rest.Config{Host: "https://api.example:6443", TLSClientConfig: rest.TLSClientConfig{CAData: []byte(pem)}},
			objects:  []client.Object{kubeDNSService},
			settings: Settings{ClusterName: "prod"},
			want:     amifamily.Cluster{Name: "prod", Endpoint: "https://api.example:6443", CABundle: encoded, DNSIP: "172.20.0.10"},
		},
		{
			name:     "in-cluster CA file, no kube-dns Service",
			config:   rest.Config{Host: "https://10.0.0.1:443", TLSClientConfig: rest.TLSClientConfig{CAFile: caFile}},
			settings: Settings{ClusterName: "prod"},
			want:     amifamily.Cluster{Name: "prod", Endpoint: "https://10.0.0.1:443", CABundle: encoded, DNSIP: DefaultClusterDNS},
		},
		{
			name:     "a headless kube-dns gives no address",
			config:   rest.Config{Host: "https://api.example", TLSClientConfig: rest.TLSClientConfig{CAData: []byte(pem)}},
			objects:  []client.Object{headless},
			settings: Settings{ClusterName: "prod"},
			want:     amifamily.Cluster{Name: "prod", Endpoint: "https://api.example", CABundle: encoded, DNSIP: DefaultClusterDNS},
		},
		{
			name:    "flags win",
			config:  rest.Config{Host: "https://api.example", TLSClientConfig: rest.TLSClientConfig{CAData: []byte(pem)}},
			objects: []client.Object{kubeDNSService},
			settings: Settings{ClusterName: "prod", ClusterEndpoint: "https://eks.example", ClusterCABundle: "Q0E=",
				ClusterDNS: "10.100.0.10", ClusterServiceCIDR: "10.100.0.0/16"},
			want: amifamily.Cluster{Name: "prod", Endpoint: "https://eks.example", CABundle: "Q0E=", DNSIP: "10.100.0.10", ServiceCIDR: "10.100.0.0/16"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reader := fake.NewClientBuilder().WithObjects(tc.objects...).Build()
			got, err := clusterInfo(context.Background(), &tc.config, reader, tc.settings)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("clusterInfo = %+v, want %+v", got, tc.want)
			}
		})
	}
}
