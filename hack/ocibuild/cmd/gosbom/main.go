// Command gosbom writes the CycloneDX SBOM of a Go binary from its build
// info (make release: one per lockctl binary).
//
//	gosbom -version v0.1.0 -out dist/lockctl-v0.1.0-linux-amd64.cdx.json dist/lockctl-v0.1.0-linux-amd64
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/redlease/redlease/hack/ocibuild/internal/sbom"
)

func main() {
	version := flag.String("version", "", "the release version (the build info of a trimmed build says (devel))")
	out := flag.String("out", "", "the SBOM file to write")
	flag.Parse()
	if err := run(*version, *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "gosbom:", err)
		os.Exit(1)
	}
}

func run(version, out string, args []string) error {
	if version == "" || out == "" || len(args) != 1 {
		return fmt.Errorf("usage: gosbom -version V -out FILE BINARY")
	}
	bom, err := sbom.Binary(args[0], version)
	if err != nil {
		return err
	}
	return sbom.Write(bom, out)
}
