/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisacl_test

import (
	"encoding/hex"
	"testing"

	"github.com/redlease/redlease/internal/redisacl"
)

func TestNewPassword(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		pw := redisacl.NewPassword()
		if b, err := hex.DecodeString(pw); err != nil || len(b) != 32 {
			t.Fatalf("NewPassword = %q: want 32 random bytes in hex", pw)
		}
		if seen[pw] {
			t.Fatalf("NewPassword repeated %q", pw)
		}
		seen[pw] = true
	}
}

func TestPasswordHash(t *testing.T) {
	// SHA-256 test vectors, in the lowercase hex ACL SETUSER requires.
	tests := map[string]string{
		"":    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"abc": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	}
	for pw, want := range tests {
		if got := redisacl.PasswordHash(pw); got != want {
			t.Errorf("PasswordHash(%q) = %s, want %s", pw, got, want)
		}
	}
}
