package localcluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckBinaries(t *testing.T) {
	program := []byte("#!/bin/sh\n")
	cases := []struct {
		name        string
		etcd        []byte // nil: file absent
		mode        os.FileMode
		wantMissing bool
		wantErr     string
	}{
		{name: "both present", etcd: program, mode: 0o755},
		{name: "missing", wantMissing: true, wantErr: "run `make tools`"},
		{name: "package archive", etcd: []byte("!<arch>\n__.PKGDEF"), mode: 0o644, wantErr: "package archive"},
		{name: "not executable", etcd: program, mode: 0o644, wantErr: "not executable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "kube-apiserver"), program, 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.etcd != nil {
				if err := os.WriteFile(filepath.Join(dir, "etcd"), tc.etcd, tc.mode); err != nil {
					t.Fatal(err)
				}
			}
			err := CheckBinaries(dir)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckBinaries: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("CheckBinaries = %v, want an error containing %q", err, tc.wantErr)
			}
			if got := errors.Is(err, ErrMissingBinary); got != tc.wantMissing {
				t.Errorf("errors.Is(err, ErrMissingBinary) = %v, want %v", got, tc.wantMissing)
			}
		})
	}
}
