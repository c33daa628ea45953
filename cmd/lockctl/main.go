// Command lockctl runs commands under redlease distributed locks. See
// internal/lockctl and docs/lockctl.md.
package main

import (
	"context"
	"os"

	"github.com/redlease/redlease/internal/lockctl"
)

func main() {
	os.Exit(lockctl.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
