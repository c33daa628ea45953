/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package cosigntest publishes a release with make publish, signed with a
// throwaway cosign key, and verifies what a registry serves with the cosign
// CLI (bin/cosign, built by hack/install-tools.sh) the way a user does with
// a key: test/release on loopback, test/node on the node's bridge. Nothing
// here signs or checks a signature itself: cosign does both.
package cosigntest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ErrVerify is a cosign verify that failed.
var ErrVerify = errors.New("cosigntest: cosign verify failed")

// Cosign is the cosign CLI of a clone, with its TUF cache kept in a
// directory of the test's.
type Cosign struct {
	// Bin is bin/cosign.
	Bin string
	// tufRoot is cosign's TUF_ROOT: nothing is written to the user's.
	tufRoot string
	// trustedRoot is a Sigstore trusted root that trusts nothing: given to
	// cosign verify, it keeps cosign from fetching Sigstore's public one
	// (a lookup that would leave the machine), and no Fulcio certificate
	// or Rekor entry can vouch for a signature: only the --key can.
	trustedRoot string
}

// emptyTrustedRoot is a Sigstore TrustedRoot with no authority in it.
const emptyTrustedRoot = `{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1"}`

// New is root's bin/cosign, its state under t.TempDir().
func New(t testing.TB, root string) *Cosign {
	t.Helper()
	bin := filepath.Join(root, "bin", "cosign")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("cosigntest: %v: run hack/install-tools.sh cosign (make tools)", err)
	}
	c := &Cosign{Bin: bin, tufRoot: t.TempDir()}
	c.trustedRoot = filepath.Join(c.tufRoot, "trusted_root.json")
	if err := os.WriteFile(c.trustedRoot, []byte(emptyTrustedRoot), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// env is the environment of every cosign (and make publish) the tests run:
// an empty key password, and cosign's TUF cache in c.tufRoot. (HOME stays:
// make publish finds the tools and Go's caches under it.)
func (c *Cosign) env() []string {
	return append(os.Environ(), "COSIGN_PASSWORD=", "TUF_ROOT="+c.tufRoot)
}

// run runs name with args in dir under c.env, bounded to five minutes; it
// returns stdout and, on failure, an error holding both outputs.
func (c *Cosign) run(ctx context.Context, dir, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...) //nolint:gosec // G204: bin/cosign and make of the clone
	cmd.Dir, cmd.Env = dir, c.env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w\n%s%s", filepath.Base(name), strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), nil
}

// KeyPair generates a cosign key pair NAME.key, NAME.pub in dir (cosign
// generate-key-pair, empty password) and returns their paths.
func (c *Cosign) KeyPair(t testing.TB, dir, name string) (key, pub string) {
	t.Helper()
	if _, err := c.run(t.Context(), dir, c.Bin, "generate-key-pair", "--output-key-prefix", name); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, name+".key"), filepath.Join(dir, name+".pub")
}

// Publish runs make publish in root: the release in dist (version) pushed
// to registry, an HTTP registry, signed with key; it returns the published
// references, REF@DIGEST: the manager, lockctl, the chart.
func (c *Cosign) Publish(t testing.TB, root, dist, registry, version, key string) []string {
	t.Helper()
	out, err := c.run(t.Context(), root, "make", "--no-print-directory", "-s", "publish", "VERSION="+version, "DIST="+dist,
		"REGISTRY="+registry, "COSIGN_KEY="+key, "PLAIN_HTTP=1")
	if err != nil {
		t.Fatal(err)
	}
	refs := strings.Fields(out)
	if len(refs) != 3 {
		t.Fatalf("make publish printed %q, want three references (manager, lockctl, chart)", out)
	}
	return refs
}

// Verify runs cosign verify --key pub on ref (a tag or a digest) against an
// HTTP registry, without a transparency log (make publish with a key uploads
// none) and offline (the empty trusted root), and returns the digests the
// verified signatures name. A refusal is ErrVerify, with cosign's output.
func (c *Cosign) Verify(ctx context.Context, pub, ref string) ([]string, error) {
	out, err := c.run(ctx, "", c.Bin, "verify", "--key", pub, "--insecure-ignore-tlog=true", "--trusted-root", c.trustedRoot,
		"--allow-http-registry", "--allow-insecure-registry", "--output", "json", ref)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrVerify, err)
	}
	return signedDigests(out)
}
