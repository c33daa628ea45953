/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisacl

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
)

// ControllerACLFileLine is the controller's user for modes as a line of a
// Redis aclfile ("user redlease-operator on #<sha256> ~* ..."), with the
// password stored as its SHA-256, as ACL SAVE writes it. A server started
// with that aclfile (on every node: ACLs do not replicate) has the user
// after every restart, which a user made with ACL SETUSER loses unless the
// server saves its ACLs to a file.
func ControllerACLFileLine(password string, modes ControllerModes) (string, error) {
	if password == "" {
		return "", errors.New("redisacl: a controller password must be non-empty")
	}
	sum := sha256.Sum256([]byte(password))
	return strings.Join(append([]string{"user", ControllerUser, "on", "#" + hex.EncodeToString(sum[:])}, ControllerRules(modes)...), " "), nil
}
