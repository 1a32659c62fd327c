package localcluster

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"slices"
	"testing"
)

func TestGeneratePKI(t *testing.T) {
	certs, err := generatePKI(t.TempDir(), firstServiceIP)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(readCert(t, certs.caCert))
	serving := readCert(t, certs.servingCert)
	admin := readCert(t, certs.adminCert)

	for _, host := range []string{"127.0.0.1", "10.0.0.1", "localhost", "kubernetes", "kubernetes.default.svc"} {
		t.Run("serving certificate is valid for "+host, func(t *testing.T) {
			opts := x509.VerifyOptions{DNSName: host, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
			if _, err := serving.Verify(opts); err != nil {
				t.Error(err)
			}
		})
	}
	t.Run("admin certificate is a system:masters client certificate", func(t *testing.T) {
		opts := x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
		if _, err := admin.Verify(opts); err != nil {
			t.Error(err)
		}
		if !slices.Contains(admin.Subject.Organization, "system:masters") {
			t.Errorf("admin organizations %v lack system:masters", admin.Subject.Organization)
		}
	})
	t.Run("service-account key is RSA", func(t *testing.T) {
		block := readPEM(t, certs.serviceAccountKey)
		if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err != nil {
			t.Errorf("parse %s: %v", certs.serviceAccountKey, err)
		}
		if _, err := x509.ParsePKIXPublicKey(readPEM(t, certs.serviceAccountPub).Bytes); err != nil {
			t.Errorf("parse %s: %v", certs.serviceAccountPub, err)
		}
	})
	_, serviceNet, err := net.ParseCIDR(serviceCIDR)
	if err != nil {
		t.Fatal(err)
	}
	first := slices.Clone(serviceNet.IP.To4())
	first[3]++
	if !first.Equal(firstServiceIP) {
		t.Errorf("firstServiceIP %v, want %v, the first address of %s", firstServiceIP, first, serviceCIDR)
	}
}

func readPEM(t *testing.T, path string) *pem.Block {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s holds no PEM block", path)
	}
	return block
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	cert, err := x509.ParseCertificate(readPEM(t, path).Bytes)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	return cert
}
