// Command ocibuild packs a static binary, built once per platform, into one
// multi-platform OCI image archive without a Docker engine: for each
// platform an empty base, the CA bundle at /etc/ssl/certs/ca-certificates.crt
// (so TLS to servers with public certificates works without a CA Secret),
// the binary at /<name>, a non-root user, the binary as entrypoint, and
// org.opencontainers.image.* labels; all platforms under one image index.
// -file SRC=DST adds files beside the binary (one more layer, root-owned):
// the shared libraries of a dynamically linked binary, e.g. Debian's
// redis-server for make test-node's Redis image.
// The archive loads with `ctr images import`, `kind load image-archive`,
// `podman load` or `docker load` (Docker 25 and later).
//
//	ocibuild -platform linux/amd64=dist/bin/linux-amd64/manager \
//	         -platform linux/arm64=dist/bin/linux-arm64/manager \
//	         -ca /etc/ssl/certs/ca-certificates.crt \
//	         -tag redlease/manager:v0.1.0 -out dist/manager-v0.1.0.tar \
//	         -digest-file dist/manager-v0.1.0.tar.digest -sbom dist/manager-v0.1.0.tar.cdx.json
//
// -digest-file receives the image index's digest (what a chart pins);
// -sbom the image's CycloneDX SBOM (internal/sbom).
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/redlease/redlease/hack/ocibuild/internal/sbom"
)

// nonRoot is the distroless "nonroot" user: no name needed on an empty base.
const nonRoot = "65532:65532"

// caPath is where Go's crypto/x509 (and most TLS stacks) look for the
// system roots on Linux.
const caPath = "etc/ssl/certs/ca-certificates.crt"

// epoch is every timestamp in the image: builds are reproducible.
var epoch = time.Unix(0, 0)

// platforms is the repeatable -platform OS/ARCH=BINARY flag.
type platforms []platformBinary

type platformBinary struct {
	platform v1.Platform
	binary   string
}

func (p *platforms) String() string { return fmt.Sprint(*p) }

func (p *platforms) Set(v string) error {
	plat, bin, ok := strings.Cut(v, "=")
	goos, arch, ok2 := strings.Cut(plat, "/")
	if !ok || !ok2 || goos == "" || arch == "" || bin == "" {
		return fmt.Errorf("%q: want OS/ARCH=BINARY, e.g. linux/arm64=dist/bin/linux-arm64/manager", v)
	}
	*p = append(*p, platformBinary{v1.Platform{OS: goos, Architecture: arch}, bin})
	return nil
}

// files is the repeatable -file SRC=DST flag.
type files []extraFile

type extraFile struct{ src, dst string }

func (f *files) String() string { return fmt.Sprint(*f) }

func (f *files) Set(v string) error {
	src, dst, ok := strings.Cut(v, "=")
	dst = strings.TrimLeft(dst, "/")
	if !ok || src == "" || dst == "" {
		return fmt.Errorf("%q: want SRC=DST, e.g. /lib/x86_64-linux-gnu/libc.so.6=/lib/x86_64-linux-gnu/libc.so.6", v)
	}
	*f = append(*f, extraFile{src, dst})
	return nil
}

// options are what one archive is built from.
type options struct {
	platforms platforms
	files     files  // added to every platform's image
	ca        string // the CA bundle file
	tag       string
	version   string // org.opencontainers.image.version (default: the tag's)
	revision  string // org.opencontainers.image.revision (e.g. the git commit)
	out       string
	digestOut string // the file to write the index digest to, if any
	sbomOut   string // the file to write the image's SBOM to, if any
}

func main() {
	var o options
	flag.Var(&o.platforms, "platform", "OS/ARCH=BINARY: a static binary for one platform (repeat per platform)")
	flag.Var(&o.files, "file", "SRC=DST: a file to add at DST in the image, e.g. a shared library (repeatable)")
	flag.StringVar(&o.ca, "ca", "/etc/ssl/certs/ca-certificates.crt", "CA bundle to install at /"+caPath)
	flag.StringVar(&o.tag, "tag", "", "image reference, e.g. redlease/manager:v0.1.0")
	flag.StringVar(&o.version, "version", "", "org.opencontainers.image.version (default: the tag)")
	flag.StringVar(&o.revision, "revision", "", "org.opencontainers.image.revision, e.g. the git commit")
	flag.StringVar(&o.out, "out", "", "OCI archive to write")
	flag.StringVar(&o.digestOut, "digest-file", "", "file to write the image index's digest (sha256:...) to")
	flag.StringVar(&o.sbomOut, "sbom", "", "file to write the image's CycloneDX SBOM (JSON) to")
	flag.Parse()
	if err := build(o); err != nil {
		fmt.Fprintln(os.Stderr, "ocibuild:", err)
		os.Exit(1)
	}
}

func build(o options) error {
	if len(o.platforms) == 0 || o.tag == "" || o.out == "" {
		return errors.New("-platform (at least one), -tag and -out are required")
	}
	ref, err := name.NewTag(o.tag)
	if err != nil {
		return err
	}
	if o.version == "" {
		o.version = ref.TagStr()
	}
	ca, err := os.ReadFile(o.ca)
	if err != nil {
		return fmt.Errorf("the CA bundle: %w (Debian: apt-get install ca-certificates)", err)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, pb := range o.platforms {
		img, err := platformImage(pb, ca, o)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", pb.platform.OS, pb.platform.Architecture, err)
		}
		plat := pb.platform
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &plat}})
	}
	dir, err := os.MkdirTemp("", "ocibuild-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }() // a temporary directory: leaving it behind fails nothing
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	// ref.name is the tag for OCI tools; containerd names the image by
	// its annotation.
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref.TagStr(),
		"io.containerd.image.name":          containerdName(ref),
	})); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil { //nolint:gosec // G301: a build output directory (dist/), with the mode of the rest of the tree
		return err
	}
	if err := tarDir(dir, o.out); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s (%d platforms) -> %s\n", o.tag, digest, len(o.platforms), o.out)
	return writeExtras(o, ref, digest.String())
}

// writeExtras writes the digest and the SBOM o asks for.
func writeExtras(o options, ref name.Tag, digest string) error {
	if o.digestOut != "" {
		if err := os.WriteFile(o.digestOut, []byte(digest+"\n"), 0o644); err != nil { //nolint:gosec // G306: a public build output
			return err
		}
	}
	if o.sbomOut == "" {
		return nil
	}
	var bins []string
	for _, pb := range o.platforms {
		bins = append(bins, pb.binary)
	}
	bom, err := sbom.Image(ref.Context().Name(), o.version, digest, bins, o.ca)
	if err != nil {
		return err
	}
	return sbom.Write(bom, o.sbomOut)
}

// containerdName is the name containerd's CRI, and so the kubelet, looks
// an image up by: the reference normalized as Docker does, docker.io for
// Docker Hub. go-containerregistry spells Docker Hub index.docker.io, a name
// the kubelet never asks for: an image imported under it was not found,
// and with imagePullPolicy IfNotPresent the kubelet went to pull
// redlease/manager from Docker Hub (make test-node found it).
func containerdName(ref name.Tag) string {
	if ref.RegistryStr() == name.DefaultRegistry {
		return "docker.io/" + ref.RepositoryStr() + ":" + ref.TagStr()
	}
	return ref.Name()
}

// platformImage is one platform's image: the CA bundle layer, then the
// binary's.
func platformImage(pb platformBinary, ca []byte, o options) (v1.Image, error) {
	data, err := os.ReadFile(pb.binary)
	if err != nil {
		return nil, err
	}
	entry := filepath.Base(pb.binary)
	caLayer, err := fileLayer(caPath, ca, 0o644, 0)
	if err != nil {
		return nil, err
	}
	binLayer, err := fileLayer(entry, data, 0o755, 65532)
	if err != nil {
		return nil, err
	}
	layers := []v1.Layer{caLayer, binLayer}
	if len(o.files) > 0 {
		l, err := filesLayer(o.files)
		if err != nil {
			return nil, err
		}
		layers = append(layers, l)
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layers...)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Variant = pb.platform.OS, pb.platform.Architecture, pb.platform.Variant
	cfg.Created = v1.Time{Time: epoch}
	cfg.Config.Entrypoint = []string{"/" + entry}
	cfg.Config.User = nonRoot
	cfg.Config.WorkingDir = "/"
	cfg.Config.Env = []string{"SSL_CERT_FILE=/" + caPath}
	cfg.Config.Labels = labels(entry, o)
	return mutate.ConfigFile(img, cfg)
}

// labels are the org.opencontainers.image.* annotations SBOM and registry
// tools read.
func labels(entry string, o options) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "redlease " + entry,
		"org.opencontainers.image.description": "redlease " + entry + ": distributed locks on Redis for Kubernetes",
		"org.opencontainers.image.source":      "https://github.com/redlease/redlease",
		"org.opencontainers.image.url":         "https://github.com/redlease/redlease",
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.vendor":      "redlease",
		"org.opencontainers.image.version":     o.version,
		"org.opencontainers.image.created":     epoch.UTC().Format(time.RFC3339),
	}
	if o.revision != "" {
		l["org.opencontainers.image.revision"] = o.revision
	}
	return l
}

// fileLayer is an OCI layer holding one file at path (its directories
// created, owned by root), owned by uid.
func fileLayer(path string, data []byte, mode int64, uid int) (v1.Layer, error) {
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		if err := writeFile(tw, map[string]bool{}, path, data, mode, uid); err != nil {
			return nil, err
		}
		if err := tw.Close(); err != nil {
			return nil, err
		}
		return io.NopCloser(&buf), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// filesLayer is an OCI layer holding the -file files, root-owned, each with
// its source's permission bits (symbolic links followed).
func filesLayer(fs files) (v1.Layer, error) {
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		dirs := map[string]bool{}
		for _, f := range fs {
			st, err := os.Stat(f.src)
			if err != nil {
				return nil, err
			}
			data, err := os.ReadFile(f.src)
			if err != nil {
				return nil, err
			}
			if err := writeFile(tw, dirs, f.dst, data, int64(st.Mode().Perm()), 0); err != nil {
				return nil, err
			}
		}
		if err := tw.Close(); err != nil {
			return nil, err
		}
		return io.NopCloser(&buf), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// writeFile writes path's directories (those not in written yet, owned by
// root) and the file, owned by uid.
func writeFile(tw *tar.Writer, written map[string]bool, path string, data []byte, mode int64, uid int) error {
	var dirs []string
	for d := filepath.Dir(path); d != "."; d = filepath.Dir(d) {
		dirs = append([]string{d}, dirs...)
	}
	for _, d := range dirs {
		if written[d] {
			continue
		}
		written[d] = true
		if err := tw.WriteHeader(&tar.Header{Name: d + "/", Mode: 0o755, ModTime: epoch, Typeflag: tar.TypeDir}); err != nil {
			return err
		}
	}
	hdr := &tar.Header{Name: path, Mode: mode, Size: int64(len(data)), Uid: uid, Gid: uid, ModTime: epoch, Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// tarDir writes the OCI layout in dir as the archive out (oci-layout,
// index.json and blobs/ at its root), with fixed timestamps.
func tarDir(dir, out string) (err error) {
	f, err := os.Create(out) //nolint:gosec // G304: the -out the caller asked for
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return tw.WriteHeader(&tar.Header{Name: rel + "/", Mode: 0o755, ModTime: epoch, Typeflag: tar.TypeDir})
		}
		data, err := os.ReadFile(path) //nolint:gosec // G304: a file of the layout this command just wrote
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: rel, Mode: 0o644, Size: int64(len(data)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
