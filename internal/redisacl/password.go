/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisacl

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
)

// passwordBytes is the entropy of a generated password: 256 bits.
const passwordBytes = 32

// NewPassword returns a random password: 32 bytes from crypto/rand, hex
// encoded (64 characters that need no quoting in a Secret, a URL or a
// redis.conf). crypto/rand.Read does not fail since Go 1.24 (it crashes
// the program instead), so there is no error to return.
func NewPassword() string {
	b := make([]byte, passwordBytes)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// PasswordHash is how Redis stores a password and how ACL SETUSER accepts
// one without its clear text ("#<hash>"): lowercase hex SHA-256.
func PasswordHash(pw string) string {
	sum := sha256.Sum256([]byte(pw))
	return hex.EncodeToString(sum[:])
}

// isHash reports whether h has the form ACL SETUSER requires of a hash:
// exactly 64 lowercase hex digits.
func isHash(h string) bool {
	if len(h) != 2*sha256.Size {
		return false
	}
	for i := range len(h) {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
