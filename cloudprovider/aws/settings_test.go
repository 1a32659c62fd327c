package aws

import (
	"context"
	"flag"
	"reflect"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"

	"github.com/joinery-dev/joinery/cloudprovider"
)

func TestFlagsAndEnvironment(t *testing.T) {
	cases := []struct {
		name     string
		env      map[string]string
		args     []string
		launches bool
		want     Settings
		wantErr  string
	}{
		{
			name:     "defaults need a cluster name to launch",
			launches: true,
			want:     Settings{VMMemoryOverheadPercent: cloudprovider.DefaultVMMemoryOverheadPercent},
			wantErr:  "--cluster-name is required",
		},
		{
			name: "reading instance types needs no cluster name",
			want: Settings{VMMemoryOverheadPercent: cloudprovider.DefaultVMMemoryOverheadPercent},
		},
		{
			name:     "Karpenter's environment variables are the defaults",
			env:      map[string]string{"CLUSTER_NAME": "prod", "VM_MEMORY_OVERHEAD_PERCENT": "0.1", "RESERVED_ENIS": "1", "ISOLATED_VPC": "true"},
			launches: true,
			want:     Settings{ClusterName: "prod", VMMemoryOverheadPercent: 0.1, ReservedENIs: 1, IsolatedVPC: true},
		},
		{
			name:     "flags win over the environment",
			env:      map[string]string{"CLUSTER_NAME": "prod", "RESERVED_ENIS": "1"},
			args:     []string{"--cluster-name=dev", "--reserved-enis=2", "--aws-endpoint-url=http://127.0.0.1:4566", "--aws-region=us-east-1"},
			launches: true,
			want:     Settings{ClusterName: "dev", ReservedENIs: 2, EndpointURL: "http://127.0.0.1:4566", Region: "us-east-1", VMMemoryOverheadPercent: cloudprovider.DefaultVMMemoryOverheadPercent},
		},
		{
			name:    "an unparsable environment variable is an error",
			env:     map[string]string{"RESERVED_ENIS": "two"},
			want:    Settings{VMMemoryOverheadPercent: cloudprovider.DefaultVMMemoryOverheadPercent},
			wantErr: `RESERVED_ENIS="two"`,
		},
		{
			name:    "overhead is a fraction",
			args:    []string{"--vm-memory-overhead-percent=7.5"},
			want:    Settings{VMMemoryOverheadPercent: 7.5},
			wantErr: "not a fraction",
		},
		{
			name:     "ENABLE_ZONAL_SHIFT and EKS_CONTROL_PLANE",
			env:      map[string]string{"CLUSTER_NAME": "prod", "ENABLE_ZONAL_SHIFT": "true", "EKS_CONTROL_PLANE": "true"},
			launches: true,
			want:     Settings{ClusterName: "prod", EnableZonalShift: true, EKSControlPlane: true, VMMemoryOverheadPercent: cloudprovider.DefaultVMMemoryOverheadPercent},
		},
		{
			name:    "zonal shifts are the cluster's: the scheduler needs its name too",
			args:    []string{"--enable-zonal-shift"},
			want:    Settings{EnableZonalShift: true, VMMemoryOverheadPercent: cloudprovider.DefaultVMMemoryOverheadPercent},
			wantErr: "--enable-zonal-shift needs --cluster-name",
		},
		{
			name:    "the poll interval is positive",
			args:    []string{"--cluster-name=prod", "--enable-zonal-shift", "--zonal-shift-poll-interval=0s"},
			want:    Settings{ClusterName: "prod", EnableZonalShift: true, ZonalShiftPollInterval: -1, VMMemoryOverheadPercent: cloudprovider.DefaultVMMemoryOverheadPercent},
			wantErr: "--zonal-shift-poll-interval 0s is not positive",
		},
		{
			name:    "an unparsable ENABLE_ZONAL_SHIFT is an error",
			env:     map[string]string{"ENABLE_ZONAL_SHIFT": "yes please"},
			want:    Settings{VMMemoryOverheadPercent: cloudprovider.DefaultVMMemoryOverheadPercent},
			wantErr: `ENABLE_ZONAL_SHIFT="yes please"`,
		},
		{
			name:    "the endpoint is a URL",
			args:    []string{"--aws-endpoint-url=127.0.0.1:4566"},
			want:    Settings{EndpointURL: "127.0.0.1:4566", VMMemoryOverheadPercent: cloudprovider.DefaultVMMemoryOverheadPercent},
			wantErr: "not an http(s) URL",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, name := range []string{"CLUSTER_NAME", "CLUSTER_ENDPOINT", "CLUSTER_CA_BUNDLE", "CLUSTER_DNS", "CLUSTER_SERVICE_CIDR", "AWS_REGION", "AWS_ENDPOINT_URL", "VM_MEMORY_OVERHEAD_PERCENT", "RESERVED_ENIS", "ISOLATED_VPC", "ENABLE_ZONAL_SHIFT", "EKS_CONTROL_PLANE"} {
				t.Setenv(name, tc.env[name])
			}
			var s Settings
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			s.BindFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := s.Validate(tc.launches)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Validate = %v, want an error containing %q", err, tc.wantErr)
			}
			s.envErrs = nil
			// Cases leave the poll interval at its default unless they say otherwise (-1: 0).
			switch tc.want.ZonalShiftPollInterval {
			case 0:
				tc.want.ZonalShiftPollInterval = DefaultZonalShiftPollInterval
			case -1:
				tc.want.ZonalShiftPollInterval = 0
			}
			if !reflect.DeepEqual(s, tc.want) {
				t.Errorf("settings = %+v, want %+v", s, tc.want)
			}
		})
	}
}

func TestAWSConfig(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIATEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")

	s := Settings{Region: "eu-west-1", EndpointURL: "http://127.0.0.1:4566"}
	cfg, err := s.AWSConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Region != "eu-west-1" || awssdk.ToString(cfg.BaseEndpoint) != "http://127.0.0.1:4566" {
		t.Errorf("region %q, base endpoint %q", cfg.Region, awssdk.ToString(cfg.BaseEndpoint))
	}
	creds, err := cfg.Credentials.Retrieve(context.Background())
	if err != nil || creds.AccessKeyID != "AKIATEST" {
		t.Errorf("credentials %+v, %v: want the environment's", creds, err)
	}

	if _, err := (&Settings{}).AWSConfig(context.Background()); err == nil || !strings.Contains(err.Error(), "no AWS region") {
		t.Errorf("AWSConfig without a region = %v, want an error naming the region", err)
	}
}

func TestPricingRegion(t *testing.T) {
	for region, want := range map[string]string{
		"us-west-2": "us-east-1", "us-east-1": "us-east-1", "ca-central-1": "us-east-1",
		"eu-west-1": "eu-central-1", "ap-southeast-2": "ap-south-1", "cn-north-1": "cn-northwest-1",
	} {
		if got := PricingRegion(region); got != want {
			t.Errorf("PricingRegion(%s) = %s, want %s", region, got, want)
		}
	}
}
