package statewright

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// The environment variables FromEnv, EnvAddress and NewClientFromEnv read; every
// Statewright client reads the same ones.
const (
	// EnvAddressVar is the server's host:port.
	EnvAddressVar = "STATEWRIGHT_ADDRESS"
	// EnvTargetVar is the older name of EnvAddressVar, read when that one is unset.
	EnvTargetVar = "STATEWRIGHT_TARGET"
	// EnvTokenVar is a bearer token sent with every call.
	EnvTokenVar = "STATEWRIGHT_TOKEN"
	// EnvTLSCAVar is a PEM file of the CA certificates that sign the server's certificate.
	EnvTLSCAVar = "STATEWRIGHT_TLS_CA"
	// EnvTLSCertVar and EnvTLSKeyVar are PEM files of the client certificate and its key,
	// for mTLS; both or neither.
	EnvTLSCertVar = "STATEWRIGHT_TLS_CERT"
	EnvTLSKeyVar  = "STATEWRIGHT_TLS_KEY"
)

// DefaultAddress is the server EnvAddress names when no variable does: the one `make dev`
// serves.
const DefaultAddress = "127.0.0.1:50051"

// ErrTokenOverPlaintext is wrapped by the error NewClient returns for a token that would
// cross the network unencrypted: TLS is off and the address is not a loopback one.
var ErrTokenOverPlaintext = errors.New("statewright: refusing to send a token over plaintext")

// Option configures NewClient (and so the Worker that uses the client). Options apply in
// order: a later one replaces what an earlier one set, so explicit options given after
// FromEnv override the environment.
type Option func(*settings)

// settings is what the options say; NewClient turns it into dial options.
type settings struct {
	tls        bool
	caFile     string
	caPEM      []byte
	certFile   string
	keyFile    string
	certPEM    []byte
	keyPEM     []byte
	serverName string
	transport  credentials.TransportCredentials

	tokens             TokenSource
	tokenOverPlaintext bool

	dial []grpc.DialOption
	errs []error
}

// WithTLS turns TLS on, verifying the server against the system's roots unless a CA is
// given (WithCAFile, WithCAPEM). The CA and client certificate options turn TLS on too;
// without any of them a client speaks plaintext.
func WithTLS() Option {
	return func(s *settings) { s.tls = true }
}

// WithCAFile turns TLS on and verifies the server's certificate against the CA
// certificates in the PEM file at path (instead of the system's roots). The file is read
// once, by NewClient.
func WithCAFile(path string) Option {
	return func(s *settings) { s.tls, s.caFile, s.caPEM = true, path, nil }
}

// WithCAPEM is WithCAFile with the PEM given as bytes.
func WithCAPEM(pem []byte) Option {
	return func(s *settings) { s.tls, s.caFile, s.caPEM = true, "", pem }
}

// WithClientCertFiles turns TLS on and presents the client certificate in certFile, with
// its private key in keyFile (both PEM), to a server that asks for one (mTLS). The files
// are read again at each new connection's handshake after either changes, so a rotated
// certificate (cert-manager rewrites the files in place) is used without a restart; if
// the new files do not form a pair yet, the last good pair is kept.
func WithClientCertFiles(certFile, keyFile string) Option {
	return func(s *settings) {
		s.tls, s.certFile, s.keyFile, s.certPEM, s.keyPEM = true, certFile, keyFile, nil, nil
	}
}

// WithClientCertPEM is WithClientCertFiles with the certificate and key given as bytes.
func WithClientCertPEM(certPEM, keyPEM []byte) Option {
	return func(s *settings) {
		s.tls, s.certFile, s.keyFile, s.certPEM, s.keyPEM = true, "", "", certPEM, keyPEM
	}
}

// WithTLSServerName checks the server's certificate against name instead of the host
// the address names, for example when connecting through an IP address to a certificate
// issued for a DNS name.
func WithTLSServerName(name string) Option {
	return func(s *settings) { s.serverName = name }
}

// WithTransportCredentials sets the connection's transport credentials outright (for
// example TLS with a tls.Config of one's own), in place of the TLS options above, which
// must then not be given. Credentials whose security protocol is neither "insecure" nor
// "local" count as encrypted for the token check.
func WithTransportCredentials(creds credentials.TransportCredentials) Option {
	return func(s *settings) { s.transport = creds }
}

// WithToken sends token as `authorization: Bearer <token>` with every call, unary and
// streaming, of both services. NewClient refuses a token over plaintext to an address that
// is not a loopback one, unless WithTokenOverPlaintext says otherwise.
func WithToken(token string) Option {
	return func(s *settings) {
		if token == "" {
			s.errs = append(s.errs, errors.New("statewright: WithToken: the token is empty"))
			return
		}
		s.tokens = staticToken(token)
	}
}

// WithTokenSource asks src for the token of each call, for tokens that expire and are
// refreshed (see TokenSource for how its answers are cached). The same plaintext rule as
// WithToken applies.
func WithTokenSource(src TokenSource) Option {
	return func(s *settings) {
		if src == nil {
			s.errs = append(s.errs, errors.New("statewright: WithTokenSource: nil source"))
			return
		}
		s.tokens = src
	}
}

// WithTokenOverPlaintext lets a token go over a plaintext connection to an address that is
// not a loopback one, where anyone on the path can read it and call as its owner. Meant for
// a network that is private by other means (a service mesh's sidecar doing the TLS).
func WithTokenOverPlaintext() Option {
	return func(s *settings) { s.tokenOverPlaintext = true }
}

// WithDialOptions passes gRPC dial options through to grpc.NewClient, after the client's
// own (the service config, the credentials), so they can override them.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(s *settings) { s.dial = append(s.dial, opts...) }
}

// FromEnv configures TLS and the token from the environment, as every Statewright client
// does: STATEWRIGHT_TOKEN is the token; STATEWRIGHT_TLS_CA the CA file;
// STATEWRIGHT_TLS_CERT and STATEWRIGHT_TLS_KEY the client certificate and key, for mTLS.
// Any of the TLS variables set turns TLS on. Unset or empty variables change nothing. The
// address is not an option: EnvAddress reads it.
func FromEnv() Option {
	return func(s *settings) {
		if token := strings.TrimSpace(os.Getenv(EnvTokenVar)); token != "" {
			s.tokens = staticToken(token)
		}
		if ca := os.Getenv(EnvTLSCAVar); ca != "" {
			WithCAFile(ca)(s)
		}
		cert, key := os.Getenv(EnvTLSCertVar), os.Getenv(EnvTLSKeyVar)
		switch {
		case cert != "" && key != "":
			WithClientCertFiles(cert, key)(s)
		case cert != "" || key != "":
			set, unset := EnvTLSCertVar, EnvTLSKeyVar
			if cert == "" {
				set, unset = unset, set
			}
			s.errs = append(s.errs, fmt.Errorf(
				"statewright: %s is set but %s is not: a client certificate needs both", set, unset))
		}
	}
}

// EnvAddress is the server's address as the environment names it: STATEWRIGHT_ADDRESS, or
// the older STATEWRIGHT_TARGET when that is unset, or DefaultAddress.
func EnvAddress() string {
	if address := os.Getenv(EnvAddressVar); address != "" {
		return address
	}
	if target := os.Getenv(EnvTargetVar); target != "" {
		return target
	}
	return DefaultAddress
}
