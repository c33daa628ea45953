package protocol_test

import (
	"testing"
	"time"

	"github.com/redlease/redlease/internal/protocol"
)

// ParseGrant reads every form a "granted" message has had, and takes a
// counter only when the whole tail is well formed and names the counter's
// history (protocol 6): anything else means "confirm first", never a bound
// from half a message, nor from a protocol-4 or 5 tail without a history.
func TestParseGrant(t *testing.T) {
	for _, tt := range []struct {
		payload string
		want    protocol.Grant
	}{
		{"d", protocol.Grant{Digest: "d"}},
		{"d n", protocol.Grant{Digest: "d", Next: "n"}},
		{"d - 17 1000 hab12", protocol.Grant{Digest: "d", Counted: true, Counter: 17, History: "ab12", PX: time.Second}},
		{"d n 17 300 hab12 2", protocol.Grant{Digest: "d", Next: "n", Counted: true, Counter: 17, History: "ab12", PX: 300 * time.Millisecond, Held: 2}},
		{"d - 17 1000", protocol.Grant{Digest: "d"}},             // protocol 4 and 5: no history
		{"d n 17 300 2", protocol.Grant{Digest: "d", Next: "n"}}, // protocol 4 and 5, a semaphore's
		{"d n 17 300 h", protocol.Grant{Digest: "d", Next: "n"}},
		{"d n 17", protocol.Grant{Digest: "d", Next: "n"}},
		{"d n x 300 hab", protocol.Grant{Digest: "d", Next: "n"}},
		{"d n 17 0 hab", protocol.Grant{Digest: "d", Next: "n"}},
		{"d n -1 300 hab", protocol.Grant{Digest: "d", Next: "n"}},
		{"d n 17 300 hab 0", protocol.Grant{Digest: "d", Next: "n"}},
		{"d n 17 300 hab x", protocol.Grant{Digest: "d", Next: "n"}},
	} {
		if got := protocol.ParseGrant(tt.payload); got != tt.want {
			t.Errorf("ParseGrant(%q) = %+v, want %+v", tt.payload, got, tt.want)
		}
	}
}
