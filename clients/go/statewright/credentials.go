package statewright

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
)

// TokenRefreshMargin is how long before a token's Expiry the client asks its source for
// a new one, so that a token never expires on the way to the server.
const TokenRefreshMargin = 10 * time.Second

// Token is a bearer token, and until when it may be reused.
type Token struct {
	// Value goes as `authorization: Bearer <Value>`.
	Value string
	// Expiry, when set, lets the client reuse Value for every call until TokenRefreshMargin
	// before it. Zero means the source is asked again for the next call.
	Expiry time.Time
}

// TokenSource gives the token for a call. The client asks it when it holds no reusable
// token: for every call when the tokens it gives have no Expiry; otherwise once, and again
// shortly before the token expires or after the server answers a call UNAUTHENTICATED. It
// is asked by one call at a time (so that one refresh serves all the calls waiting for it)
// unless its last token had no Expiry: calls then ask it concurrently.
//
// An error fails the call with UNAUTHENTICATED and the error's text. ctx is the call's.
type TokenSource interface {
	Token(ctx context.Context) (Token, error)
}

// TokenSourceFunc adapts a function to a TokenSource.
type TokenSourceFunc func(ctx context.Context) (Token, error)

// Token calls f.
func (f TokenSourceFunc) Token(ctx context.Context) (Token, error) { return f(ctx) }

type staticToken string

func (s staticToken) Token(context.Context) (Token, error) { return Token{Value: string(s)}, nil }

// bearer is the per-call credentials that put the token on every call.
type bearer struct {
	src TokenSource
	// secure makes gRPC itself refuse to send the token over a connection that is not
	// encrypted, whatever dial options came later.
	secure bool

	// refresh is held by the one call asking src for a reusable token.
	refresh chan struct{}
	mu      sync.Mutex
	cached  Token
	// reusable: src's last token had an Expiry (or src has not answered yet), so src is
	// asked one call at a time.
	reusable bool
}

func newBearer(src TokenSource, secure bool) *bearer {
	return &bearer{src: src, secure: secure, refresh: make(chan struct{}, 1), reusable: true}
}

func (b *bearer) GetRequestMetadata(ctx context.Context, _ ...string) (map[string]string, error) {
	token, err := b.token(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]string{"authorization": "Bearer " + token}, nil
}

func (b *bearer) RequireTransportSecurity() bool { return b.secure }

func (b *bearer) token(ctx context.Context) (string, error) {
	if s, ok := b.src.(staticToken); ok {
		return string(s), nil
	}
	if value, ok, reusable := b.fresh(); ok {
		return value, nil
	} else if !reusable {
		return b.ask(ctx)
	}
	select {
	case b.refresh <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-b.refresh }()
	// Another call may have refreshed it while this one waited.
	if value, ok, _ := b.fresh(); ok {
		return value, nil
	}
	return b.ask(ctx)
}

// fresh returns the cached token if it may still be used, and whether src's tokens are
// reusable at all.
func (b *bearer) fresh() (value string, ok, reusable bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cached.Value != "" && time.Now().Before(b.cached.Expiry.Add(-TokenRefreshMargin)) {
		return b.cached.Value, true, b.reusable
	}
	return "", false, b.reusable
}

func (b *bearer) ask(ctx context.Context) (string, error) {
	token, err := b.src.Token(ctx)
	if err == nil && token.Value == "" {
		err = errors.New("it gave an empty token")
	}
	if err != nil {
		return "", fmt.Errorf("statewright: the token source failed: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reusable = !token.Expiry.IsZero()
	if b.reusable {
		b.cached = token
	} else {
		b.cached = Token{}
	}
	return token.Value, nil
}

// forget drops the cached token, after the server refused one: it may have been revoked
// or have expired early, and the source may know better now.
func (b *bearer) forget() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cached = Token{}
}

// transportCredentials builds what the TLS options say; secure tells whether it encrypts.
func (s *settings) transportCredentials() (creds credentials.TransportCredentials, secure bool, err error) {
	if s.transport != nil {
		if s.tls || s.serverName != "" {
			return nil, false, errors.New("statewright: WithTransportCredentials replaces the TLS options " +
				"(WithTLS, the CA and client certificate options, WithTLSServerName, the STATEWRIGHT_TLS_* variables): give one or the other")
		}
		protocol := s.transport.Info().SecurityProtocol
		return s.transport, protocol != "insecure" && protocol != "local", nil
	}
	if !s.tls {
		if s.serverName != "" {
			return nil, false, errors.New("statewright: WithTLSServerName without TLS: turn TLS on (WithTLS, WithCAFile)")
		}
		return insecure.NewCredentials(), false, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.serverName}
	caPEM, caName := s.caPEM, "the CA PEM"
	if s.caFile != "" {
		caName = "CA file " + s.caFile
		if caPEM, err = os.ReadFile(s.caFile); err != nil {
			return nil, false, fmt.Errorf("statewright: reading the CA file: %w", err)
		}
	}
	if caPEM != nil {
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(caPEM) {
			return nil, false, fmt.Errorf("statewright: %s holds no PEM certificate", caName)
		}
	}
	switch {
	case s.certFile != "" || s.keyFile != "":
		files := &keyPairFiles{cert: s.certFile, key: s.keyFile}
		if _, err := files.load(); err != nil {
			return nil, false, err
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return files.load() }
	case s.certPEM != nil || s.keyPEM != nil:
		pair, err := tls.X509KeyPair(s.certPEM, s.keyPEM)
		if err != nil {
			return nil, false, fmt.Errorf("statewright: the client certificate and key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return credentials.NewTLS(cfg), true, nil
}

// keyPairFiles is a client certificate read from files, read again when they change.
type keyPairFiles struct {
	cert, key string

	mu     sync.Mutex
	stamps [2]fileStamp
	pair   *tls.Certificate
}

type fileStamp struct {
	modified time.Time
	size     int64
}

func stampOf(path string) (fileStamp, error) {
	info, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{modified: info.ModTime(), size: info.Size()}, nil
}

// load returns the pair the files hold now; when they cannot be read or do not match
// (halfway through a rotation), the last good pair, or the error if there is none yet.
func (k *keyPairFiles) load() (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	certStamp, err1 := stampOf(k.cert)
	keyStamp, err2 := stampOf(k.key)
	stamps := [2]fileStamp{certStamp, keyStamp}
	if err := errors.Join(err1, err2); err == nil && k.pair != nil && stamps == k.stamps {
		return k.pair, nil
	}
	pair, err := tls.LoadX509KeyPair(k.cert, k.key)
	if err != nil {
		if k.pair != nil {
			return k.pair, nil
		}
		return nil, fmt.Errorf("statewright: the client certificate %s and key %s: %w", k.cert, k.key, err)
	}
	k.pair, k.stamps = &pair, stamps
	return k.pair, nil
}

// loopbackTarget tells whether every address target names is on this machine (a loopback
// IP, localhost, or a Unix socket), where plaintext crosses no network.
func loopbackTarget(target string) bool {
	endpoint := target
	if u, err := url.Parse(target); err == nil && u.Scheme != "" {
		switch u.Scheme {
		case "unix", "unix-abstract":
			return true
		case "ipv4", "ipv6":
			for _, address := range strings.Split(u.Opaque, ",") {
				if !loopbackEndpoint(address) {
					return false
				}
			}
			return true
		case "dns", "passthrough":
			endpoint = strings.TrimPrefix(u.Path, "/")
			if u.Opaque != "" {
				endpoint = u.Opaque
			}
		default:
			// "localhost:50051" parses as scheme "localhost": like gRPC, a scheme no
			// resolver serves means the whole target is the address.
			if resolver.Get(u.Scheme) != nil {
				return false
			}
		}
	}
	return loopbackEndpoint(endpoint)
}

func loopbackEndpoint(endpoint string) bool {
	host := endpoint
	if h, _, err := net.SplitHostPort(endpoint); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
