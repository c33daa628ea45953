// Command registry is make test-node's and test/release's OCI registry: a
// release served the way users fetch it (helm install oci://..., the kubelet
// pulling images, cosign verify), and make publish's image push.
//
//	registry serve -addr 10.213.0.1:25050 -log requests.log
//	registry push -archive manager-v0.1.0.tar -to 10.213.0.1:25050/redlease/manager:v0.1.0
//
// serve runs go-containerregistry's in-memory registry (pkg/registry) over
// plain HTTP until SIGTERM, and writes one line per request (method, path
// and query: containerd names the upstream of a mirror in ns=) to -log; it
// prints the address it listens on (-addr 127.0.0.1:0 picks a free port).
// Any tag is a tag, so cosign's signatures (sha256-<digest>.sig) are served
// like images. push copies the image index of an OCI archive (hack/ocibuild's
// output) to a repository and prints its digest; it logs in as docker's
// config says (docker login ghcr.io), anonymously without one.
package main

import (
	"archive/tar"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func main() {
	if len(os.Args) < 2 {
		log.Fatal("usage: registry serve|push ...")
	}
	var err error
	switch os.Args[1] {
	case "serve":
		fs := flag.NewFlagSet("serve", flag.ExitOnError)
		addr, logFile := fs.String("addr", "", "host:port to listen on"), fs.String("log", "", "file for one line per request")
		_ = fs.Parse(os.Args[2:])
		err = serve(*addr, *logFile)
	case "push":
		fs := flag.NewFlagSet("push", flag.ExitOnError)
		archive, to := fs.String("archive", "", "OCI archive"), fs.String("to", "", "host:port/repository:tag")
		_ = fs.Parse(os.Args[2:])
		var d v1.Hash
		if d, err = push(*archive, *to); err == nil {
			fmt.Println(d)
		}
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		log.Fatal(err)
	}
}

func serve(addr, logFile string) error {
	f, err := os.Create(logFile) //nolint:gosec // G304: the file the harness names
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr())
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: handler(f)}
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// handler is the in-memory registry, writing "METHOD URI" of each request
// to requests.
func handler(requests io.Writer) http.Handler {
	var mu sync.Mutex
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		_, _ = fmt.Fprintf(requests, "%s %s\n", r.Method, r.URL.RequestURI())
		mu.Unlock()
		reg.ServeHTTP(w, r)
	})
}

// push reads the archive's layout (its index.json names the image index)
// and writes that index with every manifest and blob to the repository; it
// returns the index's digest.
func push(archive, to string) (v1.Hash, error) {
	dir, err := os.MkdirTemp("", "registry-push-")
	if err != nil {
		return v1.Hash{}, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := untar(archive, dir); err != nil {
		return v1.Hash{}, err
	}
	outer, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return v1.Hash{}, err
	}
	m, err := outer.IndexManifest()
	if err != nil {
		return v1.Hash{}, err
	}
	if len(m.Manifests) != 1 {
		return v1.Hash{}, fmt.Errorf("%s: %d entries in index.json, want one image index", archive, len(m.Manifests))
	}
	idx, err := outer.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		return v1.Hash{}, err
	}
	ref, err := name.ParseReference(to, name.Insecure)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := remote.WriteIndex(ref, idx, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return v1.Hash{}, err
	}
	return idx.Digest()
}

func untar(archive, dir string) error {
	f, err := os.Open(archive) //nolint:gosec // G304: the archive the harness names
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		// Rooted before it is joined: "../x" lands in dir, never above it.
		p := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o750); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
				return err
			}
			out, err := os.Create(p) //nolint:gosec // G304: inside dir (rooted above)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, tr); err != nil { //nolint:gosec // G110: the harness's own release archives
				_ = out.Close()
				return err
			}
			if err := out.Close(); err != nil {
				return err
			}
		}
	}
}
