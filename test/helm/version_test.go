package helm_test

import (
	"strings"
	"testing"
)

// TestVersionsFollowTheVersionFile: the VERSION file is the one version
// source (the Makefile stamps it into the binaries and the image labels,
// make release into the packaged chart); what the repository spells out
// besides must agree with it: Chart.yaml's appVersion and version, and the
// manager image config/default deploys.
func TestVersionsFollowTheVersionFile(t *testing.T) {
	t.Parallel()
	data, err := readFile(repoRoot(t) + "/VERSION")
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimSpace(string(data))
	chart := readYAML(t, "charts/redlease/Chart.yaml")
	if chart["appVersion"] != v || chart["version"] != strings.TrimPrefix(v, "v") {
		t.Errorf("Chart.yaml: version %v, appVersion %v; VERSION says %s (version %s)", chart["version"], chart["appVersion"], v, strings.TrimPrefix(v, "v"))
	}
	images, _ := readYAML(t, "config/manager/kustomization.yaml")["images"].([]any)
	for _, i := range images {
		if img, _ := i.(map[string]any); img["newTag"] != v {
			t.Errorf("config/manager/kustomization.yaml deploys %v:%v; VERSION says %s", img["newName"], img["newTag"], v)
		}
	}
	manager, err := readFile(repoRoot(t) + "/config/manager/manager.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(manager), "image: ghcr.io/redlease/manager:"+v+"\n") {
		t.Errorf("config/manager/manager.yaml does not name ghcr.io/redlease/manager:%s", v)
	}
}
