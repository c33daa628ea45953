// Package sbom writes CycloneDX software bills of materials with
// github.com/CycloneDX/cyclonedx-go, from what the Go toolchain recorded in
// each binary (debug/buildinfo): the main module, every module linked in,
// the toolchain and the build settings. make release writes one per lockctl
// binary and one per image.
package sbom

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// Binary is the SBOM of the Go binary at path: an application component
// named after the file, at version (the Makefile's VERSION: the build info
// says "(devel)" for a trimmed build), with its SHA-256, and one library
// component per module linked in.
func Binary(path, version string) (*cdx.BOM, error) {
	app, err := binaryComponent(path, version)
	if err != nil {
		return nil, err
	}
	bom := cdx.NewBOM()
	deps := app.Components
	app.Components = nil
	bom.Metadata = &cdx.Metadata{Component: app}
	bom.Components = deps
	return bom, nil
}

// Image is the SBOM of an image: the container (ref, its index digest),
// holding each platform's binary (with its modules) and the CA bundle.
func Image(ref, version, digest string, binaries []string, caBundle string) (*cdx.BOM, error) {
	var parts []cdx.Component
	for _, b := range binaries {
		c, err := binaryComponent(b, version)
		if err != nil {
			return nil, err
		}
		parts = append(parts, *c)
	}
	ca, err := fileComponent(caBundle, "/etc/ssl/certs/ca-certificates.crt")
	if err != nil {
		return nil, err
	}
	parts = append(parts, ca)
	bom := cdx.NewBOM()
	bom.Metadata = &cdx.Metadata{Component: &cdx.Component{
		BOMRef:  ref + "@" + digest,
		Type:    cdx.ComponentTypeContainer,
		Name:    ref,
		Version: version,
		Hashes:  &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: trimAlgo(digest)}},
	}}
	bom.Components = &parts
	return bom, nil
}

// Write encodes bom as indented JSON into path.
func Write(bom *cdx.BOM, path string) (err error) {
	f, err := os.Create(path) //nolint:gosec // G304: the output file the caller asked for
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	enc := cdx.NewBOMEncoder(f, cdx.BOMFileFormatJSON)
	enc.SetPretty(true)
	return enc.Encode(bom)
}

// binaryComponent is the application at path, its modules nested.
func binaryComponent(path, version string) (*cdx.Component, error) {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: reading its Go build info: %w", path, err)
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return nil, err
	}
	props := []cdx.Property{{Name: "go:toolchain", Value: bi.GoVersion}}
	for _, s := range bi.Settings {
		props = append(props, cdx.Property{Name: "go:build:" + s.Key, Value: s.Value})
	}
	var mods []cdx.Component
	for _, m := range bi.Deps {
		if m.Replace != nil {
			m = m.Replace
		}
		mods = append(mods, moduleComponent(m))
	}
	name := filepath.Base(path)
	return &cdx.Component{
		BOMRef:     "pkg:golang/" + bi.Main.Path + "@" + version + "#" + name + "-" + sum[:12],
		Type:       cdx.ComponentTypeApplication,
		Name:       name,
		Version:    version,
		PackageURL: "pkg:golang/" + bi.Main.Path + "@" + version,
		Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: sum}},
		Properties: &props,
		Components: &mods,
	}, nil
}

// moduleComponent is one module linked into a binary; its go.sum hash is
// a property (an h1: directory hash, not a file hash CycloneDX knows).
func moduleComponent(m *debug.Module) cdx.Component {
	purl := "pkg:golang/" + m.Path + "@" + m.Version
	c := cdx.Component{BOMRef: purl, Type: cdx.ComponentTypeLibrary, Name: m.Path, Version: m.Version, PackageURL: purl}
	if m.Sum != "" {
		c.Properties = &[]cdx.Property{{Name: "go:module:sum", Value: m.Sum}}
	}
	return c
}

// fileComponent is a file of an image, at its path there.
func fileComponent(path, imagePath string) (cdx.Component, error) {
	sum, err := fileSHA256(path)
	if err != nil {
		return cdx.Component{}, err
	}
	return cdx.Component{
		BOMRef: "file:" + imagePath,
		Type:   cdx.ComponentTypeFile,
		Name:   imagePath,
		Hashes: &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: sum}},
	}, nil
}

func fileSHA256(path string) (string, error) {
	data, err := os.ReadFile(path) //nolint:gosec // G304: a build output the caller named
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:]), nil
}

// trimAlgo turns "sha256:abc..." into "abc...".
func trimAlgo(digest string) string {
	if len(digest) > 7 && digest[:7] == "sha256:" {
		return digest[7:]
	}
	return digest
}
