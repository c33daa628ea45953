// Command sitecheck fails when the built docs site (make docs) has a
// broken internal link or anchor, a page no link reaches, or a search
// entry that leads nowhere (internal/sitecheck).
//
// Usage: go run ./hack/sitecheck DIR
package main

import (
	"fmt"
	"os"

	"github.com/redlease/redlease/internal/sitecheck"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sitecheck DIR")
		os.Exit(2)
	}
	r, err := sitecheck.Check(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "sitecheck:", err)
		os.Exit(1)
	}
	for _, p := range r.Problems {
		fmt.Fprintln(os.Stderr, p)
	}
	fmt.Printf("sitecheck: %d pages, %d internal links and images, %d broken\n", r.Pages, r.Links, len(r.Problems))
	if len(r.Problems) > 0 {
		os.Exit(1)
	}
}
