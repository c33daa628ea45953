/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package cosigntest

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ErrNoPayload is a cosign verify that succeeded and printed no payload.
var ErrNoPayload = errors.New("cosigntest: cosign verify printed no signed payload")

// payload is the part of cosign's simple signing payload the tests read:
// the digest the signature covers (cosign verify --output json prints one
// per verified signature).
type payload struct {
	Critical struct {
		Image struct {
			Digest string `json:"docker-manifest-digest"`
		} `json:"image"`
	} `json:"critical"`
}

// signedDigests are the digests of cosign verify's JSON output.
func signedDigests(out string) ([]string, error) {
	var ps []payload
	if err := json.Unmarshal([]byte(out), &ps); err != nil {
		return nil, fmt.Errorf("cosigntest: cosign verify's output %q: %w", out, err)
	}
	if len(ps) == 0 {
		return nil, ErrNoPayload
	}
	ds := make([]string, len(ps))
	for i, p := range ps {
		ds[i] = p.Critical.Image.Digest
	}
	return ds, nil
}
