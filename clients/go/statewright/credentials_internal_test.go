package statewright

import (
	"crypto/x509"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/statewright/statewright/clients/go/internal/testpki"
)

func leafNames(t *testing.T, files *keyPairFiles) []string {
	t.Helper()
	pair, err := files.load()
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.DNSNames
}

// rewrite replaces path's content as a rotation does, with a modification time of its own
// so that the change shows however coarse the file system's clock is.
func rewrite(t *testing.T, path string, content []byte, modified time.Time) {
	t.Helper()
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, modified, modified); err != nil {
		t.Fatal(err)
	}
}

func TestClientCertificateFilesAreReadAgainWhenTheyChange(t *testing.T) {
	ca := testpki.NewCA(t, "ca")
	first, second := ca.Client("worker-a"), ca.Client("worker-b")
	files := &keyPairFiles{cert: first.CertFile, key: first.KeyFile}
	if got := leafNames(t, files); !slices.Equal(got, []string{"worker-a"}) {
		t.Fatalf("first load: %v", got)
	}
	if again, _ := files.load(); again != files.pair {
		t.Error("unchanged files were parsed again")
	}

	// Halfway through a rotation (the new certificate, the old key) the last good pair stays.
	later := time.Now().Add(time.Minute)
	rewrite(t, first.CertFile, second.CertPEM, later)
	if got := leafNames(t, files); !slices.Equal(got, []string{"worker-a"}) {
		t.Fatalf("with a certificate and a key that do not match: %v, want the last good pair", got)
	}
	rewrite(t, first.KeyFile, second.KeyPEM, later)
	if got := leafNames(t, files); !slices.Equal(got, []string{"worker-b"}) {
		t.Fatalf("after the rotation: %v, want worker-b", got)
	}

	// Files that vanish keep the last good pair; before any good pair there is the error.
	if err := os.Remove(first.CertFile); err != nil {
		t.Fatal(err)
	}
	if got := leafNames(t, files); !slices.Equal(got, []string{"worker-b"}) {
		t.Fatalf("with the certificate gone: %v, want the last good pair", got)
	}
	if _, err := (&keyPairFiles{cert: first.CertFile, key: first.KeyFile}).load(); err == nil {
		t.Error("a first load of missing files succeeded")
	}
}
