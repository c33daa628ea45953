/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/redlease/redlease/api/v1alpha1"
)

// ErrInvalidSecret reports a credentials Secret whose data cannot be used.
// Its messages name the key at fault, never a value.
var ErrInvalidSecret = errors.New("redisconn: invalid credentials Secret")

// FromSecret reads the data of a credentials Secret (the keys of
// api/v1alpha1's Credentials* constants) into the servers' and the
// sentinels' credentials. With tlsOn both get the same TLS: serverName and
// insecure as published in status.connection.tls, the CA bundle of ca.crt
// (absent: the system roots) and the client certificate of tls.crt and
// tls.key (absent: none). Without tlsOn the TLS keys are ignored. Absent
// username or password keys mean the default user and no AUTH.
func FromSecret(data map[string][]byte, tlsOn bool, serverName string, insecure bool) (servers, sentinels Credentials, err error) {
	servers = Credentials{Username: string(data[v1alpha1.CredentialsUsername]), Password: string(data[v1alpha1.CredentialsPassword])}
	sentinels = Credentials{Username: string(data[v1alpha1.CredentialsSentinelUsername]), Password: string(data[v1alpha1.CredentialsSentinelPassword])}
	if !tlsOn {
		return servers, sentinels, nil
	}
	t := &TLS{ServerName: serverName, InsecureSkipVerify: insecure}
	if ca := data[v1alpha1.CredentialsCA]; len(ca) > 0 {
		if !x509.NewCertPool().AppendCertsFromPEM(ca) {
			return Credentials{}, Credentials{}, fmt.Errorf("%w: key %q holds no PEM certificate", ErrInvalidSecret, v1alpha1.CredentialsCA)
		}
		t.CAPEM = ca
	}
	if t.ClientCert, err = clientCert(data); err != nil {
		return Credentials{}, Credentials{}, err
	}
	servers.TLS, sentinels.TLS = t, t
	return servers, sentinels, nil
}

// clientCert parses tls.crt and tls.key, which come together or not at all.
func clientCert(data map[string][]byte) (*tls.Certificate, error) {
	certPEM, keyPEM := data[v1alpha1.CredentialsClientCert], data[v1alpha1.CredentialsClientKey]
	switch {
	case len(certPEM) == 0 && len(keyPEM) == 0:
		return nil, nil
	case len(certPEM) == 0 || len(keyPEM) == 0:
		return nil, fmt.Errorf("%w: keys %q and %q come together (mutual TLS), one is missing or empty",
			ErrInvalidSecret, v1alpha1.CredentialsClientCert, v1alpha1.CredentialsClientKey)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// crypto/tls's messages describe the problem, never the bytes.
		return nil, fmt.Errorf("%w: keys %q and %q are not a PEM certificate and its private key: %w",
			ErrInvalidSecret, v1alpha1.CredentialsClientCert, v1alpha1.CredentialsClientKey, err)
	}
	return &cert, nil
}
