package docs_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDiagramsAreShown: every picture rendered from docs/diagrams
// (`make diagrams`; `make verify` fails when one is stale) has its source
// there and is shown on a page with alt text that says what it shows, so a
// reader without the picture (a screen reader, a text browser) loses
// nothing.
func TestDiagramsAreShown(t *testing.T) {
	root := repoRoot(t)
	svgs, err := filepath.Glob(filepath.Join(root, "docs", "images", "*.svg"))
	if err != nil || len(svgs) < 4 {
		t.Fatalf("docs/images holds %d SVGs (%v): want the four diagrams", len(svgs), err)
	}
	image := regexp.MustCompile(`!\[([^\]]*)\]\(([^)\s]+)\)`)
	alts := map[string][]string{} // image file name -> alt texts
	for page, text := range userDocs(t) {
		for _, line := range proseLines(text) {
			for _, m := range image.FindAllStringSubmatch(line, -1) {
				if strings.HasSuffix(m[2], ".svg") {
					alts[filepath.Base(m[2])] = append(alts[filepath.Base(m[2])], page+": "+m[1])
				}
			}
		}
	}
	for _, svg := range svgs {
		name := filepath.Base(svg)
		read(t, filepath.Join("docs", "diagrams", strings.TrimSuffix(name, ".svg")+".dot"))
		if len(alts[name]) == 0 {
			t.Errorf("docs/images/%s is shown on no page", name)
		}
		for _, alt := range alts[name] {
			if _, text, _ := strings.Cut(alt, ": "); len(strings.Fields(text)) < 12 {
				t.Errorf("%s: the alt text of %s says too little to stand for the picture", alt, name)
			}
		}
	}
}

// TestBenchmarkPlotsAreExplained: every plot make bench writes
// (docs/bench-*.png) is on docs/benchmarks.md with alt text, followed by a
// paragraph of at least two sentences that says what it shows.
func TestBenchmarkPlotsAreExplained(t *testing.T) {
	plots, err := filepath.Glob(filepath.Join(repoRoot(t), "docs", "bench-*.png"))
	if err != nil || len(plots) < 7 {
		t.Fatalf("docs holds %d plots (%v): want make bench's seven", len(plots), err)
	}
	page := read(t, "docs/benchmarks.md")
	for _, p := range plots {
		name := filepath.Base(p)
		m := regexp.MustCompile(`(?s)\n!\[([^\]]+)\]\(` + regexp.QuoteMeta(name) + `\)\n\n(.*?)\n\n`).FindStringSubmatch(page)
		switch {
		case m == nil:
			t.Errorf("docs/benchmarks.md shows no %s with alt text, followed by a paragraph", name)
		case len(regexp.MustCompile(`[.!?](\s|$)`).FindAllString(m[2], -1)) < 2:
			t.Errorf("docs/benchmarks.md: the paragraph after %s has fewer than two sentences:\n%s", name, m[2])
		}
	}
}
