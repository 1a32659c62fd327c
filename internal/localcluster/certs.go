package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certValidity covers any test run or `make run` session; the PKI is regenerated on every Start.
const certValidity = 7 * 24 * time.Hour

// pki holds the paths of the cluster's certificates and keys, and the PEM data a client needs.
type pki struct {
	caCert, caKey           string
	servingCert, servingKey string
	adminCert, adminKey     string
	// serviceAccountKey signs service-account tokens; serviceAccountPub verifies them.
	serviceAccountKey, serviceAccountPub string

	caCertPEM, adminCertPEM, adminKeyPEM []byte
}

// servingNames are the DNS names kube-apiserver's certificate is valid for: how clients on
// this machine and (later) in-cluster components address it.
var servingNames = []string{
	"localhost",
	"kubernetes",
	"kubernetes.default",
	"kubernetes.default.svc",
	"kubernetes.default.svc.cluster.local",
}

// generatePKI writes a fresh CA, the API server's serving certificate, an admin client
// certificate and a service-account signing key into dir.
func generatePKI(dir string, serviceIP net.IP) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create pki dir: %w", err)
	}
	p := &pki{
		caCert:            filepath.Join(dir, "ca.crt"),
		caKey:             filepath.Join(dir, "ca.key"),
		servingCert:       filepath.Join(dir, "apiserver.crt"),
		servingKey:        filepath.Join(dir, "apiserver.key"),
		adminCert:         filepath.Join(dir, "admin.crt"),
		adminKey:          filepath.Join(dir, "admin.key"),
		serviceAccountKey: filepath.Join(dir, "sa.key"),
		serviceAccountPub: filepath.Join(dir, "sa.pub"),
	}

	now := time.Now()
	caTemplate := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "joinery-local-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	ca, err := issue(caTemplate, nil)
	if err != nil {
		return nil, fmt.Errorf("CA: %w", err)
	}
	p.caCertPEM = ca.certPEM

	servingTemplate := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(certValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    servingNames,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), serviceIP},
	}
	serving, err := issue(servingTemplate, ca)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}

	adminTemplate := &x509.Certificate{
		// system:masters is bound to cluster-admin by the API server's bootstrap RBAC policy.
		Subject:     pkix.Name{CommonName: "joinery-admin", Organization: []string{"system:masters"}},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(certValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	admin, err := issue(adminTemplate, ca)
	if err != nil {
		return nil, fmt.Errorf("admin certificate: %w", err)
	}
	p.adminCertPEM, p.adminKeyPEM = admin.certPEM, admin.keyPEM

	saKeyPEM, saPubPEM, err := serviceAccountKeyPair()
	if err != nil {
		return nil, fmt.Errorf("service-account key: %w", err)
	}

	files := map[string][]byte{
		p.caCert: ca.certPEM, p.caKey: ca.keyPEM,
		p.servingCert: serving.certPEM, p.servingKey: serving.keyPEM,
		p.adminCert: admin.certPEM, p.adminKey: admin.keyPEM,
		p.serviceAccountKey: saKeyPEM, p.serviceAccountPub: saPubPEM,
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
	}
	return p, nil
}

// keyPair is a certificate with its private key, parsed and PEM-encoded.
type keyPair struct {
	cert            *x509.Certificate
	key             crypto.Signer
	certPEM, keyPEM []byte
}

// issue creates an ECDSA key and a certificate for template, signed by parent, or
// self-signed when parent is nil.
func issue(template *x509.Certificate, parent *keyPair) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	template.SerialNumber = serial
	signerCert, signerKey := template, crypto.Signer(key)
	if parent != nil {
		signerCert, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, signerCert, key.Public(), signerKey)
	if err != nil {
		return nil, fmt.Errorf("sign certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	return &keyPair{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// serviceAccountKeyPair generates the RSA key pair kube-apiserver signs and verifies
// service-account tokens with (RS256, what every token consumer accepts).
func serviceAccountKeyPair() (keyPEM, pubPEM []byte, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, fmt.Errorf("generate RSA key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, nil, fmt.Errorf("encode public key: %w", err)
	}
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	pubPEM = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	return keyPEM, pubPEM, nil
}
