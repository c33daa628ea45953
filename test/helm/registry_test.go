package helm_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// imageRefs are the image references of rendered (or shipped) YAML: every
// `image:` value, of containers, init containers and hooks alike.
var imageRefs = regexp.MustCompile(`(?m)^[\t -]*image:[ \t]*["']?([^\s"'#]+)`)

func images(text string) []string {
	var out []string
	for _, m := range imageRefs.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestImageRegistry: both images are ghcr.io/redlease/* by default, built
// by the one "redlease.image" helper as registry/repository:tag[@digest];
// global.imageRegistry (Bitnami's convention) overrides every image's
// registry, hooks included, so a mirror is one value; an image's own
// registry applies without it, and an empty one leaves the bare repository.
func TestImageRegistry(t *testing.T) {
	t.Parallel()
	v := chartAppVersion(t)
	digest := "sha256:" + strings.Repeat("cd", 32)
	// Every template that runs an image: the manager, the helm test hook
	// (tests.enabled) and the uninstall hook (rbac.create), both on by default.
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"ghcr.io/redlease/manager:" + v, "ghcr.io/redlease/lockctl:" + v}},
		{[]string{"--set", "global.imageRegistry=mirror.example:5000"},
			[]string{"mirror.example:5000/redlease/manager:" + v, "mirror.example:5000/redlease/lockctl:" + v}},
		{[]string{"--set", "global.imageRegistry=mirror.example:5000,image.registry=a.example,lockctl.image.registry=b.example,image.digest=" + digest},
			[]string{"mirror.example:5000/redlease/manager:" + v + "@" + digest, "mirror.example:5000/redlease/lockctl:" + v}},
		{[]string{"--set", "image.registry=a.example/team,lockctl.image.registry=b.example:443,lockctl.image.tag=dev"},
			[]string{"a.example/team/redlease/manager:" + v, "b.example:443/redlease/lockctl:dev"}},
		{[]string{"--set", "image.registry=,lockctl.image.registry="}, []string{"redlease/manager:" + v, "redlease/lockctl:" + v}},
	} {
		out, err := helmTemplate(t, chartDir(t), tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		got := images(out)
		slices.Sort(got)
		got = slices.Compact(got)
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("helm template %v renders the images %v, want %v", tc.args, got, want)
		}
		if n := strings.Count(out, "image: "); n < 3 {
			t.Errorf("helm template %v renders %d images; want the manager, the test hook and the uninstall hook", tc.args, n)
		}
	}

	// The schema takes host[:port][/path] and refuses anything else.
	for _, bad := range []string{"global.imageRegistry=https://mirror.example", "image.registry=mirror.example/", "lockctl.image.registry=a b"} {
		if _, err := helmTemplate(t, chartDir(t), "--set", bad); err == nil {
			t.Errorf("--set %s was accepted", bad)
		}
	}
}

// implicitDockerHub is an image of the project named without a registry
// (redlease/manager, redlease/lockctl), which a container runtime pulls
// from docker.io, where the project publishes nothing.
var implicitDockerHub = regexp.MustCompile(`(^|[^A-Za-z0-9._/-])redlease/(manager|lockctl)\b`)

// TestShippedManifestsNameTheirRegistry: no manifest the repository ships
// (config/: kustomize bases and samples; charts/: the chart and its CI
// values) nor any `image:` line of the docs names an image without its
// registry. The only bare redlease/... is values.yaml's repository, which
// the chart always joins to image.registry (TestImageRegistry).
func TestShippedManifestsNameTheirRegistry(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	check := func(path string, onlyImageLines bool) {
		data, err := readFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, path)
		for i, line := range strings.Split(string(data), "\n") {
			if !implicitDockerHub.MatchString(line) {
				continue
			}
			trimmed := strings.TrimSpace(line)
			if onlyImageLines && !imageRefs.MatchString(line) {
				continue
			}
			if strings.HasPrefix(rel, filepath.Join("charts", "redlease")+string(filepath.Separator)) &&
				strings.HasSuffix(rel, "values.yaml") && strings.HasPrefix(trimmed, "repository: redlease/") {
				continue
			}
			t.Errorf("%s:%d names an image without its registry (docker.io by default): %s", rel, i+1, trimmed)
		}
	}
	for _, dir := range []string{"config", "charts"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			switch filepath.Ext(path) {
			case ".yaml", ".yml", ".tpl", ".txt", ".json":
				check(path, false)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, path := range append(docs, filepath.Join(root, "README.md")) {
		if _, err := os.Stat(path); err == nil {
			check(path, true)
		}
	}
}
