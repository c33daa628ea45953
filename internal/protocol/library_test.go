package protocol

import (
	"regexp"
	"strings"
	"testing"
)

// The library defines every shared piece once, at load, and each function
// runs only its script's own body; a script run with EVALSHA is the pieces
// it uses, in the library's order, then that same body.
func TestTheLibraryDefinesEachPieceOnce(t *testing.T) {
	lib := Library()
	defined := regexp.MustCompile(`(?m)^local function (\w+)`)
	for _, p := range pieces {
		for _, m := range defined.FindAllStringSubmatch(p, -1) {
			if n := strings.Count(lib, "local function "+m[1]+"("); n != 1 {
				t.Errorf("the library defines %s %d times; want once", m[1], n)
			}
		}
	}
	for _, s := range scripts {
		// A fast path (newFastScript) starts the function's body, and
		// the script, before every piece.
		main := strings.TrimPrefix(s.body, s.fast)
		if !strings.HasSuffix(s.src, main) || !strings.HasPrefix(s.src, s.fast) {
			t.Errorf("%s: its script does not start with its fast path and end with its body", s.FunctionName())
			continue
		}
		rest := strings.TrimSuffix(strings.TrimPrefix(s.src, s.fast), main)
		for _, p := range pieces {
			rest = strings.TrimPrefix(rest, p)
		}
		if rest != "" {
			t.Errorf("%s: its script prepends Lua that is not the library's pieces, in their order: %.80q", s.FunctionName(), rest)
		}
		if !strings.Contains(lib, "function_name='"+s.FunctionName()+"', callback=function(KEYS, ARGV)\n"+functionPrologue+s.body+"\nend") {
			t.Errorf("%s: the library's function does not run its body", s.FunctionName())
		}
	}
}
