// Package testpki makes a certificate authority and certificates for tests, in memory and
// on disk: ECDSA P-256 keys made at run time, certificates valid for minutes, so that no
// key is ever committed and none outlives the test that made it.
//
// A CA is made with a test's t, but its certificates may be issued from subtests: a
// failure to make one (which takes a broken crypto library) panics rather than calling
// the parent test's Fatal from another goroutine.
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
}

// Pair is an issued certificate and its key, as PEM and as files.
type Pair struct {
	CertPEM, KeyPEM   []byte
	CertFile, KeyFile string
}

// NewCA makes a CA whose files go under a temporary directory of t's.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey()
	tmpl := template(name)
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der := must(x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key))
	cert := must(x509.ParseCertificate(der))
	return &CA{Cert: cert, CertPEM: pemBlock("CERTIFICATE", der), key: key, dir: t.TempDir()}
}

// CertFile writes the CA's certificate to a file and returns its path.
func (ca *CA) CertFile() string {
	path := filepath.Join(ca.dir, "ca.pem")
	writeFile(path, ca.CertPEM)
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
	tmpl := template(name)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	tmpl.DNSNames = []string{"localhost"}
	return ca.issue(name, tmpl)
}

// Client issues a client certificate whose DNS SAN is name.
func (ca *CA) Client(name string) Pair {
	tmpl := template(name)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	tmpl.DNSNames = []string{name}
	return ca.issue(name, tmpl)
}

// TLSCertificate is the pair as crypto/tls wants it.
func (p Pair) TLSCertificate() tls.Certificate {
	return must(tls.X509KeyPair(p.CertPEM, p.KeyPEM))
}

func (ca *CA) issue(name string, tmpl *x509.Certificate) Pair {
	key := newKey()
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der := must(x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key))
	p := Pair{
		CertPEM:  pemBlock("CERTIFICATE", der),
		KeyPEM:   pemBlock("PRIVATE KEY", must(x509.MarshalPKCS8PrivateKey(key))),
		CertFile: filepath.Join(ca.dir, name+".crt"),
		KeyFile:  filepath.Join(ca.dir, name+".key"),
	}
	writeFile(p.CertFile, p.CertPEM)
	writeFile(p.KeyFile, p.KeyPEM)
	return p
}

func newKey() *ecdsa.PrivateKey {
	return must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
}

func template(name string) *x509.Certificate {
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: must(rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))),
		Subject:      pkix.Name{CommonName: fmt.Sprintf("statewright test %s", name)},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(Lifetime),
	}
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func writeFile(path string, content []byte) {
	if err := os.WriteFile(path, content, 0o600); err != nil {
		panic(err)
	}
}

func must[T any](value T, err error) T {
	if err != nil {
		panic(err)
	}
	return value
}
