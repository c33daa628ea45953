package docs_test

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/redlease/redlease/internal/protocol"
)

// TestProtocolVersion: every "protocol version N" in README.md and docs/
// is protocol.Version (README said 1 while protocol.md said 3).
func TestProtocolVersion(t *testing.T) {
	re := regexp.MustCompile(`(?i)protocol\s+version:?\**\s+(\d+)`)
	want := strconv.Itoa(protocol.Version)
	seen := 0
	for page, text := range userDocs(t) {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			seen++
			if m[1] != want {
				t.Errorf("%s says %q: the protocol is version %s (internal/protocol.Version)", page, m[0], want)
			}
		}
	}
	if seen == 0 {
		t.Error("no page names the protocol version: the pattern no longer matches the docs")
	}
}
