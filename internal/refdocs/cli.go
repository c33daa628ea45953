package refdocs

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// CLI is the reference page of the command tree under root: each
// command's usage, description and flags, as its --help prints them.
func CLI(root *cobra.Command) []byte {
	var b bytes.Buffer
	b.WriteString(generatedBy)
	fmt.Fprintf(&b, "# `%s` reference\n\n", root.Name())
	b.WriteString("Every command and flag, as `--help` prints them. What the commands guarantee\n")
	fmt.Fprintf(&b, "and where they stop: [%s.md](../%s.md).\n", root.Name(), root.Name())
	writeCommand(&b, root)
	return b.Bytes()
}

func writeCommand(b *bytes.Buffer, c *cobra.Command) {
	if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
		return
	}
	fmt.Fprintf(b, "\n## %s\n\n", c.CommandPath())
	if c.Runnable() {
		fmt.Fprintf(b, "```\n%s\n```\n\n", c.UseLine())
	}
	desc := c.Long
	if desc == "" {
		desc = c.Short
	}
	fmt.Fprintf(b, "%s\n", strings.TrimSpace(desc))
	if c.Example != "" {
		fmt.Fprintf(b, "\nExamples:\n\n```\n%s\n```\n", strings.TrimRight(c.Example, "\n"))
	}
	if fs := c.NonInheritedFlags(); fs.HasAvailableFlags() {
		fmt.Fprintf(b, "\nFlags:\n\n```\n%s```\n", fs.FlagUsages())
	}
	if !c.HasParent() {
		if fs := c.PersistentFlags(); fs.HasAvailableFlags() {
			fmt.Fprintf(b, "\nFlags of every command:\n\n```\n%s```\n", fs.FlagUsages())
		}
	}
	for _, sub := range c.Commands() {
		writeCommand(b, sub)
	}
}
