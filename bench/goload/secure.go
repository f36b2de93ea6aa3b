package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// bearer sends one token with every call, as a client holding a cached token does.
type bearer struct{ header string }

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": b.header}, nil
}

func (bearer) RequireTransportSecurity() bool { return true }

// dialOptions: plaintext by default; with --tls-ca the server's certificate must chain to
// that CA (the TLS handshake is resumed from a session cache, as a long-lived client's
// would be), and with --token-file every call carries the token in it.
func dialOptions(p plan) ([]grpc.DialOption, error) {
	if p.tlsCA == "" {
		if p.tokenFile != "" {
			return nil, fmt.Errorf("--token-file needs --tls-ca: a token is never sent in plaintext")
		}
		return []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, nil
	}
	pem, err := os.ReadFile(p.tlsCA)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", p.tlsCA)
	}
	config := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12, ClientSessionCache: tls.NewLRUClientSessionCache(64)}
	options := []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(config))}
	if p.tokenFile != "" {
		token, err := os.ReadFile(p.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		options = append(options, grpc.WithPerRPCCredentials(bearer{"Bearer " + strings.TrimSpace(string(token))}))
	}
	return options, nil
}
