// Package testpki makes a certificate authority and certificates for tests, in memory and
// on disk: ECDSA P-256 keys made at run time, certificates valid for minutes, so that no
// key is ever committed and none outlives the test that made it.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Lifetime is how long every certificate lives, from a minute before it was made.
const Lifetime = 15 * time.Minute

// CA is a certificate authority that issues server and client certificates.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     *ecdsa.PrivateKey
	dir     string
	t       testing.TB
}

// Pair is an issued certificate and its key, as PEM and as files.
type Pair struct {
	CertPEM, KeyPEM   []byte
	CertFile, KeyFile string
}

// NewCA makes a CA whose files go under a temporary directory of t's.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := template(t, name)
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{Cert: cert, CertPEM: pemBlock("CERTIFICATE", der), key: key, dir: t.TempDir(), t: t}
	return ca
}

// CertFile writes the CA's certificate to a file and returns its path.
func (ca *CA) CertFile() string {
	ca.t.Helper()
	path := filepath.Join(ca.dir, "ca.pem")
	if err := os.WriteFile(path, ca.CertPEM, 0o600); err != nil {
		ca.t.Fatal(err)
	}
	return path
}

// Pool is a certificate pool holding only this CA.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return pool
}

// Server issues a server certificate for 127.0.0.1, ::1 and localhost.
func (ca *CA) Server(name string) Pair {
	ca.t.Helper()
	tmpl := template(ca.t, name)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	tmpl.DNSNames = []string{"localhost"}
	return ca.issue(name, tmpl)
}

// Client issues a client certificate whose DNS SAN is name.
func (ca *CA) Client(name string) Pair {
	ca.t.Helper()
	tmpl := template(ca.t, name)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	tmpl.DNSNames = []string{name}
	return ca.issue(name, tmpl)
}

// TLSCertificate is the pair as crypto/tls wants it.
func (p Pair) TLSCertificate(t testing.TB) tls.Certificate {
	t.Helper()
	cert, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func (ca *CA) issue(name string, tmpl *x509.Certificate) Pair {
	key := newKey(ca.t)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		ca.t.Fatal(err)
	}
	p := Pair{
		CertPEM:  pemBlock("CERTIFICATE", der),
		KeyPEM:   pemBlock("PRIVATE KEY", keyDER),
		CertFile: filepath.Join(ca.dir, name+".crt"),
		KeyFile:  filepath.Join(ca.dir, name+".key"),
	}
	if err := os.WriteFile(p.CertFile, p.CertPEM, 0o600); err != nil {
		ca.t.Fatal(err)
	}
	if err := os.WriteFile(p.KeyFile, p.KeyPEM, 0o600); err != nil {
		ca.t.Fatal(err)
	}
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func template(t testing.TB, name string) *x509.Certificate {
	t.Helper()
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: fmt.Sprintf("statewright test %s", name)},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(Lifetime),
	}
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
