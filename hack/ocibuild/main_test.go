package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestBuildWritesARunnableNonRootImage(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "lockctl")
	// 0o600: build only reads it; the image gives the entry its own mode.
	if err := os.WriteFile(bin, []byte("#!not really a binary"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "image.tar")
	if err := build(bin, "redlease/lockctl:v0.0.0-test", out, "amd64"); err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Config.Entrypoint; len(got) != 1 || got[0] != "/lockctl" {
		t.Errorf("entrypoint %v, want [/lockctl]", got)
	}
	if cfg.Config.User != nonRoot || cfg.OS != "linux" || cfg.Architecture != "amd64" {
		t.Errorf("config: user %q, %s/%s", cfg.Config.User, cfg.OS, cfg.Architecture)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v; want one (empty base)", len(layers), err)
	}
}
