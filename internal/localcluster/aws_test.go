package localcluster

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestComponentsFor(t *testing.T) {
	cases := []struct {
		provider string
		want     []Component
		wantErr  bool
	}{
		{provider: "", want: AllComponents},
		{provider: CloudProviderKwok, want: AllComponents},
		{provider: CloudProviderAWS, want: AWSComponents},
		{provider: "gcp", wantErr: true},
	}
	for _, tc := range cases {
		got, err := ComponentsFor(tc.provider)
		if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
			t.Errorf("ComponentsFor(%q) = %v, %v; want %v (error %v)", tc.provider, got, err, tc.want, tc.wantErr)
		}
	}
	if !slices.Contains(AWSComponents, AWSEmulator) || slices.Contains(AllComponents, AWSEmulator) {
		t.Error("only the AWS system runs the emulator")
	}
}

// TestCheckComponentBinariesForAWS: the AWS provider needs the emulator among the components,
// and the emulator's binary comes from `make build` (JoineryBinDir).
func TestCheckComponentBinariesForAWS(t *testing.T) {
	joineryBin := t.TempDir()
	for _, name := range []string{string(JoineryScheduler), string(JoineryController), string(AWSEmulator)} {
		if err := os.WriteFile(filepath.Join(joineryBin, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{name: "aws with the emulator", opts: Options{CloudProvider: CloudProviderAWS, Components: []Component{AWSEmulator, JoineryController}, JoineryBinDir: joineryBin}},
		{name: "aws without the emulator", opts: Options{CloudProvider: CloudProviderAWS, Components: []Component{JoineryController}, JoineryBinDir: joineryBin}, wantErr: "needs the awsemulator component"},
		{name: "emulator binary missing", opts: Options{CloudProvider: CloudProviderAWS, Components: []Component{AWSEmulator}, JoineryBinDir: t.TempDir()}, wantErr: "`make build` builds it"},
		{name: "unknown provider", opts: Options{CloudProvider: "gcp"}, wantErr: `unknown cloud provider "gcp"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkComponentBinaries(tc.opts)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("checkComponentBinaries: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("checkComponentBinaries = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestCloudProviderArgs(t *testing.T) {
	kwok := &Cluster{}
	if got := kwok.cloudProviderArgs(true); !slices.Equal(got, []string{"--cloud-provider=kwok"}) {
		t.Errorf("kwok controller args %v", got)
	}
	if env := kwok.awsEnv(); env != nil {
		t.Errorf("kwok components get AWS environment %v", env)
	}

	aws := &Cluster{opts: Options{CloudProvider: CloudProviderAWS}, awsEmulatorPort: 4566}
	controller := aws.cloudProviderArgs(true)
	for _, want := range []string{"--cloud-provider=aws", "--cluster-name=" + AWSClusterName, "--aws-region=" + AWSRegion,
		"--aws-endpoint-url=http://127.0.0.1:4566", "--cluster-dns=" + clusterDNS, "--eks-control-plane",
		"--enable-zonal-shift", "--interruption-queue=" + AWSInterruptionQueue} {
		if !slices.Contains(controller, want) {
			t.Errorf("controller args %v lack %s", controller, want)
		}
	}
	scheduler := aws.cloudProviderArgs(false)
	if !slices.Contains(scheduler, "--aws-endpoint-url=http://127.0.0.1:4566") || !slices.Contains(scheduler, "--enable-zonal-shift") || slices.ContainsFunc(scheduler, func(a string) bool {
		return strings.HasPrefix(a, "--cluster-dns") || strings.HasPrefix(a, "--interruption-queue") || strings.HasPrefix(a, "--eks-control-plane")
	}) {
		t.Errorf("scheduler args %v: want the provider flags without the node bootstrap ones", scheduler)
	}
	if env := aws.awsEnv(); !slices.Contains(env, "AWS_EC2_METADATA_DISABLED=true") || !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "AWS_ACCESS_KEY_ID=") }) {
		t.Errorf("AWS environment %v: want static credentials and no instance metadata", env)
	}
}
