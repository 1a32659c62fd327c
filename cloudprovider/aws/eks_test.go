package aws

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/joinery-dev/joinery/cloudprovider/aws/amifamily"
	"github.com/joinery-dev/joinery/cloudprovider/aws/awserr"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

// TestEKSMergeRules: flags win over what EKS reports, EKS fills what they leave empty, and
// EKS is asked only when EKS_CONTROL_PLANE is on and something is missing.
func TestEKSMergeRules(t *testing.T) {
	fromEKS := eksCluster{Endpoint: "https://eks.example", CABundle: "RUtT", ServiceCIDR: "10.100.0.0/16", IPFamily: corev1.IPv4Protocol}
	cases := []struct {
		name     string
		settings Settings
		needsEKS bool
		want     Settings
	}{
		{
			name:     "off: EKS is never asked",
			settings: Settings{ClusterName: "prod"},
		},
		{
			name:     "on, nothing set: everything from EKS",
			settings: Settings{ClusterName: "prod", EKSControlPlane: true},
			needsEKS: true,
			want:     Settings{ClusterName: "prod", EKSControlPlane: true, ClusterEndpoint: "https://eks.example", ClusterCABundle: "RUtT", ClusterServiceCIDR: "10.100.0.0/16", ClusterIPFamily: corev1.IPv4Protocol},
		},
		{
			name:     "explicit settings win",
			settings: Settings{ClusterName: "prod", EKSControlPlane: true, ClusterEndpoint: "https://proxy.example", ClusterServiceCIDR: "172.20.0.0/16"},
			needsEKS: true,
			want:     Settings{ClusterName: "prod", EKSControlPlane: true, ClusterEndpoint: "https://proxy.example", ClusterCABundle: "RUtT", ClusterServiceCIDR: "172.20.0.0/16", ClusterIPFamily: corev1.IPv4Protocol},
		},
		{
			name:     "on, everything set: EKS is not asked",
			settings: Settings{ClusterName: "prod", EKSControlPlane: true, ClusterEndpoint: "https://a", ClusterCABundle: "Yg==", ClusterServiceCIDR: "10.0.0.0/16"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.settings.needsEKS(); got != tc.needsEKS {
				t.Fatalf("needsEKS = %v, want %v", got, tc.needsEKS)
			}
			if !tc.needsEKS {
				return
			}
			if got := tc.settings.withEKSCluster(fromEKS); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("merged settings %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestNodeClusterFromEKS reads the cluster from the emulator's eks:DescribeCluster through the
// real SDK: its endpoint, CA and service range replace the kubeconfig's, explicit flags still
// win, and an unknown cluster or a missing permission stops with a classified error that says
// what to fix.
func TestNodeClusterFromEKS(t *testing.T) {
	srv := awsemulator.NewServer(awsemulator.Options{Cluster: awsemulator.EKSCluster{
		Name: "prod", Endpoint: "https://prod.eks.example", CABundle: "RUtTQ0E=", ServiceCIDR: "172.20.0.0/16",
	}})
	t.Cleanup(srv.Close)
	kubeconfig := &rest.Config{Host: "https://kubeconfig.example", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("kubeconfig CA")}}
	reader := fake.NewClientBuilder().Build()
	ctx := context.Background()

	cases := []struct {
		name     string
		settings Settings
		fault    *awsemulator.Fault
		want     amifamily.Cluster
		wantErr  error
		wantMsg  string
	}{
		{
			name:     "discovered",
			settings: Settings{ClusterName: "prod", EKSControlPlane: true},
			want: amifamily.Cluster{Name: "prod", Endpoint: "https://prod.eks.example", CABundle: "RUtTQ0E=", ServiceCIDR: "172.20.0.0/16",
				IPFamily: corev1.IPv4Protocol, DNSIP: DefaultClusterDNS},
		},
		{
			name:     "a flag wins",
			settings: Settings{ClusterName: "prod", EKSControlPlane: true, ClusterEndpoint: "https://proxy.example"},
			want: amifamily.Cluster{Name: "prod", Endpoint: "https://proxy.example", CABundle: "RUtTQ0E=", ServiceCIDR: "172.20.0.0/16",
				IPFamily: corev1.IPv4Protocol, DNSIP: DefaultClusterDNS},
		},
		{
			name:     "off: the kubeconfig's",
			settings: Settings{ClusterName: "prod"},
			want:     amifamily.Cluster{Name: "prod", Endpoint: "https://kubeconfig.example", CABundle: "a3ViZWNvbmZpZyBDQQ==", DNSIP: DefaultClusterDNS},
		},
		{
			name:     "an unknown cluster",
			settings: Settings{ClusterName: "staging", EKSControlPlane: true},
			wantErr:  awserr.ErrNotFound,
			wantMsg:  `finds no cluster "staging"`,
		},
		{
			name:     "no permission",
			settings: Settings{ClusterName: "prod", EKSControlPlane: true},
			fault:    &awsemulator.Fault{Code: "AccessDeniedException", Message: "not authorized to perform eks:DescribeCluster", Status: http.StatusForbidden},
			wantErr:  awserr.ErrUnauthorized,
			wantMsg:  "grant the controller's role eks:DescribeCluster",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.fault != nil {
				srv.Inject(tc.fault.For(awsemulator.ServiceEKS, "DescribeCluster", 0))
				t.Cleanup(srv.ClearFaults)
			}
			got, err := tc.settings.NodeCluster(ctx, srv.Config(), kubeconfig, reader)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantMsg) || !strings.Contains(err.Error(), "EKS_CONTROL_PLANE") {
					t.Fatalf("NodeCluster = %v, want %v saying %q", err, tc.wantErr, tc.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("NodeCluster = %+v, want %+v", got, tc.want)
			}
		})
	}
}
