// Command ocibuild packs one static binary into an OCI image tarball without
// a Docker engine: an empty base, the binary at /<name>, a non-root user,
// the binary as entrypoint. The tarball loads with `docker load`,
// `podman load`, `ctr images import` or `kind load image-archive`.
//
//	ocibuild -binary bin/linux-amd64/manager -tag redlease/manager:v0.1.0 -out dist/manager.tar
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// nonRoot is the distroless "nonroot" user: no name needed on an empty base.
const nonRoot = "65532:65532"

func main() {
	binary := flag.String("binary", "", "static binary to put in the image")
	tag := flag.String("tag", "", "image reference, e.g. redlease/manager:v0.1.0")
	out := flag.String("out", "", "tarball to write")
	arch := flag.String("arch", "amd64", "image architecture")
	flag.Parse()
	if err := build(*binary, *tag, *out, *arch); err != nil {
		fmt.Fprintln(os.Stderr, "ocibuild:", err)
		os.Exit(1)
	}
}

func build(binary, tag, out, arch string) error {
	if binary == "" || tag == "" || out == "" {
		return fmt.Errorf("-binary, -tag and -out are required")
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(binary) //nolint:gosec // G304: the -binary the caller asked to pack
	if err != nil {
		return err
	}
	entry := "/" + filepath.Base(binary)
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		hdr := &tar.Header{Name: entry[1:], Mode: 0o755, Size: int64(len(data)), Uid: 65532, Gid: 65532,
			ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
		if err := tw.Close(); err != nil {
			return nil, err
		}
		return io.NopCloser(&buf), nil
	})
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	cfg.Created = v1.Time{Time: time.Unix(0, 0)} // reproducible
	cfg.Config.Entrypoint = []string{entry}
	cfg.Config.User = nonRoot
	cfg.Config.WorkingDir = "/"
	cfg.Config.Labels = map[string]string{"org.opencontainers.image.source": "https://github.com/redlease/redlease"}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil { //nolint:gosec // G301: a build output directory (dist/), with the mode of the rest of the tree
		return err
	}
	if err := tarball.WriteToFile(out, ref, img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s -> %s\n", tag, digest, out)
	return nil
}
