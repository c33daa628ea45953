// Package sitecheck finds what is broken in a built static site (the docs
// site, make docs): a link or an image to a file the site lacks, an
// #anchor that no element of the target page carries, a page no link
// reaches from the home page, and a search index entry that leads nowhere.
// Links with a scheme (https:, mailto:) are not followed: the check needs
// no network.
package sitecheck

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/net/html"
)

// Report is what Check found.
type Report struct {
	Pages    int      // HTML files
	Links    int      // internal links and images followed
	Problems []string // one line each, sorted
}

// page is one HTML file: the element ids it carries and the links it holds.
type page struct {
	ids   map[string]bool
	links []string
}

// Check reads the site under dir. The search index (index.json at the
// root, as layouts/index.json writes it) is checked when present.
func Check(dir string) (Report, error) {
	site := os.DirFS(dir)
	pages := map[string]*page{} // "/operator/index.html" -> page
	err := fs.WalkDir(site, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".html") {
			return err
		}
		f, err := site.Open(p)
		if err != nil {
			return err
		}
		defer f.Close() //nolint:errcheck // read-only
		doc, err := html.Parse(f)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		pages["/"+p] = parse(doc)
		return nil
	})
	if err != nil {
		return Report{}, err
	}
	c := checker{site: site, pages: pages, edges: map[string][]string{}}
	for from, pg := range pages {
		for _, link := range pg.links {
			c.follow(from, link)
		}
	}
	if err := c.searchIndex(); err != nil {
		return Report{}, err
	}
	c.orphans()
	slices.Sort(c.problems)
	return Report{Pages: len(pages), Links: c.links, Problems: slices.Compact(c.problems)}, nil
}

func parse(doc *html.Node) *page {
	pg := &page{ids: map[string]bool{}}
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		for _, a := range n.Attr {
			switch {
			case a.Key == "id", a.Key == "name" && n.Data == "a":
				pg.ids[a.Val] = true
			case a.Key == "href" && (n.Data == "a" || n.Data == "link"),
				a.Key == "src" && (n.Data == "img" || n.Data == "script"),
				a.Key == "action" && n.Data == "form": // the search box's page
				pg.links = append(pg.links, a.Val)
			}
		}
	}
	return pg
}

type checker struct {
	site     fs.FS
	pages    map[string]*page
	links    int
	problems []string
	edges    map[string][]string // page -> the pages it links to
}

// follow checks one link of page from, and records the page it leads to.
func (c *checker) follow(from, link string) {
	u, err := url.Parse(link)
	if err != nil {
		c.problems = append(c.problems, fmt.Sprintf("%s: unparsable link %q", from, link))
		return
	}
	if u.Scheme != "" || u.Host != "" {
		return
	}
	c.links++
	target := (&url.URL{Path: from}).ResolveReference(&url.URL{Path: u.Path}).Path
	if u.Path == "" {
		target = from
	}
	file := c.file(target)
	if file == "" {
		c.problems = append(c.problems, fmt.Sprintf("%s: link %q: the site has no %s", from, link, target))
		return
	}
	pg, isPage := c.pages[file]
	if isPage && file != from {
		c.edges[from] = append(c.edges[from], file)
	}
	if u.Fragment != "" && (!isPage || !pg.ids[u.Fragment]) {
		c.problems = append(c.problems, fmt.Sprintf("%s: link %q: %s has no element with id %q", from, link, file, u.Fragment))
	}
}

// file is the file a URL path serves ("/x/" is /x/index.html), or "".
func (c *checker) file(p string) string {
	for _, f := range []string{p, path.Join(p, "index.html")} {
		if info, err := fs.Stat(c.site, strings.TrimPrefix(f, "/")); err == nil && !info.IsDir() {
			return f
		}
	}
	return ""
}

// searchIndex checks the URL and heading anchors of every entry of
// index.json, as the search page links to them.
func (c *checker) searchIndex() error {
	data, err := fs.ReadFile(c.site, "index.json")
	if err != nil {
		return nil //nolint:nilerr // a site without search has nothing to check here
	}
	var entries []struct {
		U string
		H []struct{ I string }
	}
	if err := json.Unmarshal(data, &entries); err != nil {
		return fmt.Errorf("index.json: %w", err)
	}
	for _, e := range entries {
		c.follow("/index.json", e.U)
		for _, h := range e.H {
			c.follow("/index.json", e.U+"#"+h.I)
		}
	}
	return nil
}

// orphans reports every page that no chain of links from the home page
// reaches (404.html aside: the server shows it).
func (c *checker) orphans() {
	queue := []string{"/index.html"}
	seen := map[string]bool{"/index.html": true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, next := range c.edges[p] {
			if !seen[next] {
				seen[next] = true
				queue = append(queue, next)
			}
		}
	}
	for p := range c.pages {
		if !seen[p] && p != "/404.html" {
			c.problems = append(c.problems, fmt.Sprintf("%s: no link from the home page leads here", p))
		}
	}
}
