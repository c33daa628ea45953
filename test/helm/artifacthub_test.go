package helm_test

import (
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestArtifactHubAnnotations: Chart.yaml's Artifact Hub metadata tells the
// truth about the chart. artifacthub.io/images names every image the chart
// runs (hooks included) on the platforms make image builds;
// artifacthub.io/crds every CRD of files/crds; artifacthub.io/crdsExamples
// one example per CRD, each a sample of config/samples (which an API server
// accepts: TestSamplesAccepted); artifacthub.io/changes kinds that
// CHANGELOG.md's section for this version lists.
func TestArtifactHubAnnotations(t *testing.T) {
	t.Parallel()
	ann, _ := readYAML(t, "charts/redlease/Chart.yaml")["annotations"].(map[string]any)
	list := func(key string) []map[string]any {
		var out []map[string]any
		s, _ := ann[key].(string)
		if err := yaml.Unmarshal([]byte(s), &out); err != nil || len(out) == 0 {
			t.Fatalf("Chart.yaml annotation %s: %d entries (%v)", key, len(out), err)
		}
		return out
	}
	checkImages(t, list("artifacthub.io/images"))
	checkCRDs(t, list("artifacthub.io/crds"))
	checkCRDExamples(t, list("artifacthub.io/crdsExamples"))
	checkChanges(t, list("artifacthub.io/changes"))
}

func checkImages(t *testing.T, listed []map[string]any) {
	t.Helper()
	var want []string
	for _, o := range render(t).objs {
		want = append(want, containerImages(o.Object)...)
	}
	slices.Sort(want)
	want = slices.Compact(want)
	platforms := strings.Fields(regexp.MustCompile(`(?m)^IMAGE_PLATFORMS \?= (.*)$`).FindStringSubmatch(string(mustRead(t, "Makefile")))[1])
	var got []string
	for _, i := range listed {
		image := str(i, "image")
		got = append(got, image)
		if name := str(i, "name"); name == "" || !strings.Contains(image, "/redlease/"+name+":") {
			t.Errorf("artifacthub.io/images: %v is named %v", image, name)
		}
		if p := normalize(t, i["platforms"]); !reflect.DeepEqual(p, normalize(t, platforms)) {
			t.Errorf("artifacthub.io/images: %s on %v; make image builds %v", image, p, platforms)
		}
	}
	slices.Sort(got)
	if len(want) < 2 || !slices.Equal(got, want) {
		t.Errorf("artifacthub.io/images lists %v; the chart runs %v", got, want)
	}
}

// containerImages are the images of every container (and init container)
// in an object's pod template or pod spec.
func containerImages(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			if k == "containers" || k == "initContainers" {
				cs, _ := c.([]any)
				for _, c := range cs {
					container, _ := c.(map[string]any)
					out = append(out, str(container, "image"))
				}
				continue
			}
			out = append(out, containerImages(c)...)
		}
	case []any:
		for _, c := range v {
			out = append(out, containerImages(c)...)
		}
	}
	return out
}

func checkCRDs(t *testing.T, listed []map[string]any) {
	t.Helper()
	var want, got []string
	for _, crd := range chartCRDs(t) {
		versions, _, _ := unstructured.NestedSlice(crd, "spec", "versions")
		for _, v := range versions {
			version, _ := v.(map[string]any)
			want = append(want, strings.Join([]string{str(crd, "spec", "names", "kind"), str(version, "name"), str(crd, "metadata", "name")}, " "))
		}
	}
	for _, c := range listed {
		got = append(got, strings.Join([]string{str(c, "kind"), str(c, "version"), str(c, "name")}, " "))
		if d, _ := c["description"].(string); d == "" || c["displayName"] != c["kind"] {
			t.Errorf("artifacthub.io/crds: %v needs a description and its kind as displayName", c["kind"])
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("artifacthub.io/crds lists %q; files/crds holds %q", got, want)
	}
}

func chartCRDs(t *testing.T) []map[string]any {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(chartDir(t), "files", "crds", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no CRDs in files/crds (%v)", err)
	}
	var out []map[string]any
	for _, p := range paths {
		rel, _ := filepath.Rel(repoRoot(t), p)
		out = append(out, readYAML(t, rel))
	}
	return out
}

// checkCRDExamples: one example per CRD kind, each equal, but for the
// labels, to a sample of config/samples.
func checkCRDExamples(t *testing.T, examples []map[string]any) {
	t.Helper()
	samples := map[string]any{} // kind/name -> the sample without labels
	paths, _ := filepath.Glob(filepath.Join(repoRoot(t), "config", "samples", "*.yaml"))
	// A break-glass request is not a sample to apply with the others.
	requests, _ := filepath.Glob(filepath.Join(repoRoot(t), "config", "samples", "breakglass", "*.yaml"))
	paths = append(paths, requests...)
	for _, p := range paths {
		rel, _ := filepath.Rel(repoRoot(t), p)
		s := readYAML(t, rel)
		unstructured.RemoveNestedField(s, "metadata", "labels")
		samples[str(s, "kind")+"/"+str(s, "metadata", "name")] = normalize(t, s)
	}
	var kinds, want []string
	for _, e := range examples {
		id := str(e, "kind") + "/" + str(e, "metadata", "name")
		kinds = append(kinds, str(e, "kind"))
		if !reflect.DeepEqual(normalize(t, e), samples[id]) {
			t.Errorf("artifacthub.io/crdsExamples: %s is not config/samples' %s (labels aside)", id, id)
		}
	}
	for _, crd := range chartCRDs(t) {
		want = append(want, str(crd, "spec", "names", "kind"))
	}
	slices.Sort(kinds)
	slices.Sort(want)
	if !slices.Equal(kinds, want) {
		t.Errorf("artifacthub.io/crdsExamples shows %v; want one of each CRD, %v", kinds, want)
	}
}

// checkChanges: every change has a description and a kind Artifact Hub
// knows, listed under that heading in CHANGELOG.md's section for this
// version ([Unreleased] until it is released).
func checkChanges(t *testing.T, changes []map[string]any) {
	t.Helper()
	changelog := string(mustRead(t, "CHANGELOG.md"))
	section := changelogSection(changelog, strings.TrimPrefix(chartAppVersion(t), "v"))
	if section == "" {
		section = changelogSection(changelog, "Unreleased")
	}
	kinds := map[string]string{"added": "Added", "changed": "Changed", "deprecated": "Deprecated", "removed": "Removed", "fixed": "Fixed", "security": "Security"}
	for _, c := range changes {
		kind, _ := c["kind"].(string)
		heading, ok := kinds[kind]
		if d, _ := c["description"].(string); !ok || d == "" {
			t.Errorf("artifacthub.io/changes: %v: want a kind of %v and a description", c, kinds)
		} else if !strings.Contains(section, "\n### "+heading+"\n") {
			t.Errorf("artifacthub.io/changes has a change of kind %s; CHANGELOG.md's section for this version has no ### %s", kind, heading)
		}
	}
}

// changelogSection is the text under "## [version]" up to the next "## ".
func changelogSection(changelog, version string) string {
	_, rest, ok := strings.Cut(changelog, "\n## ["+version+"]")
	if !ok {
		return ""
	}
	section, _, _ := strings.Cut(rest, "\n## ")
	return section + "\n"
}

// str is the string at path in m, or "".
func str(m map[string]any, path ...string) string {
	s, _, _ := unstructured.NestedString(m, path...)
	return s
}

func mustRead(t *testing.T, rel string) []byte {
	t.Helper()
	data, err := readFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
