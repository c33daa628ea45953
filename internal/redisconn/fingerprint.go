/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisconn

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// Fingerprint identifies c (user, password, TLS settings, client
// certificate) by a hash, so that callers can key state by who connects
// without holding a secret in a map key or a log line.
func (c Credentials) Fingerprint() string {
	h := sha256.New()
	// hash.Hash's Write never returns an error, so neither does Fprintf.
	_, _ = fmt.Fprintf(h, "%q\x00%q\x00", c.Username, c.Password)
	if c.TLS != nil {
		_, _ = fmt.Fprintf(h, "tls\x00%q\x00%q\x00%v", c.TLS.CAPEM, c.TLS.ServerName, c.TLS.InsecureSkipVerify)
		if c.TLS.ClientCert != nil {
			for _, der := range c.TLS.ClientCert.Certificate {
				_, _ = fmt.Fprintf(h, "\x00cert\x00%q", der)
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
