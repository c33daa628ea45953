// Package site_test builds the docs site (site/, from docs/ and the
// top-level pages), checks its links, and opens it in headless Chromium
// from a loopback HTTP server: the landing page, a task page and the
// search page must render with their titles, the navigation by reader and,
// for search, results. Screenshots are kept (see artifactsDir).
package site_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/redlease/redlease/internal/kubetest"
	"github.com/redlease/redlease/internal/sitecheck"
)

func TestSiteInABrowser(t *testing.T) {
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "VERSION")) //nolint:gosec // G304: the repository's VERSION file
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(data))
	out := build(t, root)
	report, err := sitecheck.Check(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range report.Problems {
		t.Error(p)
	}
	if report.Pages < 15 || report.Links < 500 {
		t.Errorf("the site has %d pages and %d internal links: the build or the check lost them", report.Pages, report.Links)
	}

	checkNavListsEveryPage(t, out)

	srv := httptest.NewServer(http.FileServer(http.Dir(out))) // 127.0.0.1
	defer srv.Close()
	shots := artifactsDir(t)
	for _, c := range []struct {
		name, path, title, h1, current string
	}{
		{"landing", "/", "redlease " + version + ": distributed locks on Redis for Kubernetes", "redlease", "Home"},
		{"task-lockctl", "/lockctl/", "lockctl · redlease " + version, "lockctl", "Wrap a command or CronJob: lockctl"},
		{"search", "/search/?q=fencing+token", "Search · redlease " + version, "Search", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			shot := filepath.Join(shots, c.name+".png")
			doc := open(t, srv.URL+c.path, shot)
			if got := text(find(doc, "title", "")); got != c.title {
				t.Errorf("title %q, want %q", got, c.title)
			}
			if got := text(find(doc, "h1", "")); got != c.h1 {
				t.Errorf("h1 %q, want %q", got, c.h1)
			}
			checkNav(t, doc, c.current)
			if c.name == "search" && len(children(find(doc, "ol", "search-results"), "li")) == 0 {
				t.Errorf("the search page lists no result for %q", c.path)
			}
			if info, err := os.Stat(shot); err != nil || info.Size() < 10_000 {
				t.Errorf("no screenshot at %s (%v)", shot, err)
			}
		})
	}
}

// build runs Hugo (bin/hugo, make docs's) over site/ into a temporary
// directory.
func build(t *testing.T, root string) string {
	t.Helper()
	hugo := filepath.Join(root, "bin", "hugo")
	if _, err := os.Stat(hugo); err != nil {
		t.Fatalf("%s not found (%v): run `make docs` (or hack/install-tools.sh hugo) to build it from source", hugo, err)
	}
	out := t.TempDir()
	start := time.Now()
	cmd := exec.CommandContext(t.Context(), hugo, "--source", filepath.Join(root, "site"), "--destination", out, "--noBuildLock", "--quiet") //nolint:gosec // G204: the repository's own hugo
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hugo: %v\n%s", err, b)
	}
	t.Logf("hugo built the site in %v", time.Since(start).Round(time.Millisecond))
	return out
}

// artifactsDir is where the screenshots go: $REDLEASE_ARTIFACTS/site when
// set (CI keeps that directory), else redlease-site in the system's
// temporary directory; either way emptied first and kept after the test.
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "redlease-site")
	if a := os.Getenv("REDLEASE_ARTIFACTS"); a != "" {
		dir = filepath.Join(a, "site")
	}
	if err := os.RemoveAll(dir); err != nil { //nolint:gosec // G703: the test's own screenshot directory, under the directory the runner chose
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil { //nolint:gosec // G703: as above
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// open loads url in headless Chromium with a fresh profile, writes a
// screenshot of the window and returns the DOM after the page's scripts
// ran (the search page fetches its index: --virtual-time-budget lets it
// finish).
func open(t *testing.T, url, screenshot string) *html.Node {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("no chromium on PATH: run `make browser` (Debian's chromium)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, //nolint:gosec // G204: Debian's chromium on a loopback URL
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--window-size=1280,1000", "--hide-scrollbars",
		"--virtual-time-budget=5000", "--screenshot="+screenshot, "--dump-dom", url)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", url, err, stderr.String())
	}
	doc, err := html.Parse(&stdout)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// checkNav: the navigation groups the pages by reader, links the user
// guide and the library, and marks the page shown as current.
func checkNav(t *testing.T, doc *html.Node, current string) {
	t.Helper()
	nav := find(doc, "nav", "")
	var groups, links, currents []string
	for n := range nav.Descendants() {
		switch {
		case n.Type != html.ElementNode:
		case n.Data == "h2":
			groups = append(groups, text(n))
		case n.Data == "a" && attr(n, "aria-current") == "page":
			currents = append(currents, text(n))
			links = append(links, text(n))
		case n.Data == "a":
			links = append(links, text(n))
		}
	}
	for _, want := range []string{"Platform engineer", "Application developer"} {
		if !slices.Contains(groups, want) {
			t.Errorf("the navigation's groups are %q: no %q", groups, want)
		}
	}
	for _, want := range []string{"User guide, by task", "A lock in Go: the library", "Install and run the operator"} {
		if !slices.Contains(links, want) {
			t.Errorf("the navigation links %q: no %q", links, want)
		}
	}
	if want := slices.DeleteFunc([]string{current}, func(s string) bool { return s == "" }); !slices.Equal(currents, want) {
		t.Errorf("the navigation marks %q as the current page, want %q", currents, want)
	}
}

// checkNavListsEveryPage: the navigation (the home page's, as built) links
// every page of the site but the search page, so a page added to docs/
// without a menu entry in site/hugo.toml fails here.
func checkNavListsEveryPage(t *testing.T, out string) {
	t.Helper()
	f, err := os.Open(filepath.Join(out, "index.html")) //nolint:gosec // G304: the site this test built
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // read-only
	doc, err := html.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for n := range find(doc, "nav", "").Descendants() {
		if n.Type == html.ElementNode && n.Data == "a" {
			listed[path.Clean("/"+attr(n, "href"))] = true // "./guide/" -> "/guide"
		}
	}
	pages, err := filepath.Glob(filepath.Join(out, "*", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join(out, "*", "*", "index.html"))
	for _, p := range append(pages, more...) {
		rel, _ := filepath.Rel(out, filepath.Dir(p))
		if page := "/" + filepath.ToSlash(rel); !listed[page] && page != "/search" {
			t.Errorf("the navigation does not list %s/: add it to a menu in site/hugo.toml", page)
		}
	}
}

// find is the first element named tag (with that id, if id is set); a
// missing one is an empty element, so the checks report what they miss.
func find(doc *html.Node, tag, id string) *html.Node {
	for n := range doc.Descendants() {
		if n.Type == html.ElementNode && n.Data == tag && (id == "" || attr(n, "id") == id) {
			return n
		}
	}
	return &html.Node{Type: html.ElementNode, Data: tag}
}

func children(n *html.Node, tag string) []*html.Node {
	var out []*html.Node
	for c := range n.ChildNodes() {
		if c.Type == html.ElementNode && c.Data == tag {
			out = append(out, c)
		}
	}
	return out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// text is an element's text, its runs of white space made one space.
func text(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
