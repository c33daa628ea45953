// Command demo runs `make demo`; see internal/demo.
package main

import (
	"os"

	"github.com/redlease/redlease/internal/demo"
)

func main() { os.Exit(demo.Main(os.Args[1:])) }
