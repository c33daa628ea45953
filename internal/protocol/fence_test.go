package protocol_test

import (
	"strings"
	"testing"

	"github.com/redlease/redlease/internal/protocol"
)

// The raise script compares counters as decimal strings, by length and
// then lexically, which is exact only for canonical integers: it refuses
// any other token (leading zeros would make "0000000000000009" beat "5"
// and "12345678"), and never changes the counter for one.
func TestRaiseFenceRefusesNonCanonicalTokens(t *testing.T) {
	s := newServer(t)
	counter := protocol.FenceKey("floor")
	s.must(s.c.Set(s.ctx, counter, "12345678", 0).Err())
	for _, token := range []string{"0000000000000009", "012345679", "00", "+9", "-1", "1e9", " 9", "", "9007199254740992"} {
		err := s.run(protocol.RaiseFenceScript, []string{counter}, token).Err()
		if err == nil || !strings.Contains(err.Error(), "redlease: fence") {
			t.Errorf("raising to %q = %v, want the script's refusal", token, err)
		}
	}
	expect(t, s.c.Get(s.ctx, counter).Val(), "12345678", "the counter after the refused tokens")
	for _, tt := range []struct {
		token  string
		raised int
		after  string
	}{
		{"0", 0, "12345678"},
		{"9", 0, "12345678"},
		{"12345679", 1, "12345679"},
		{"9007199254740991", 1, "9007199254740991"},
	} {
		n, err := s.run(protocol.RaiseFenceScript, []string{counter}, tt.token).Int()
		s.must(err)
		expect(t, n, tt.raised, "raised to "+tt.token)
		expect(t, s.c.Get(s.ctx, counter).Val(), tt.after, "the counter after "+tt.token)
	}
}
