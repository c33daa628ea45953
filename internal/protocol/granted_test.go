package protocol_test

import (
	"testing"
	"time"

	"github.com/redlease/redlease/internal/protocol"
)

// ParseGrant reads every form a "granted" message has had, and takes a
// counter only when the whole tail is well formed: anything else means
// "confirm first", never a bound from half a message.
func TestParseGrant(t *testing.T) {
	for _, tt := range []struct {
		payload string
		want    protocol.Grant
	}{
		{"d", protocol.Grant{Digest: "d"}},
		{"d n", protocol.Grant{Digest: "d", Next: "n"}},
		{"d - 17 1000", protocol.Grant{Digest: "d", Counted: true, Counter: 17, PX: time.Second}},
		{"d n 17 300 2", protocol.Grant{Digest: "d", Next: "n", Counted: true, Counter: 17, PX: 300 * time.Millisecond, Held: 2}},
		{"d n 17", protocol.Grant{Digest: "d", Next: "n"}},
		{"d n x 300", protocol.Grant{Digest: "d", Next: "n"}},
		{"d n 17 0", protocol.Grant{Digest: "d", Next: "n"}},
		{"d n -1 300", protocol.Grant{Digest: "d", Next: "n"}},
		{"d n 17 300 0", protocol.Grant{Digest: "d", Next: "n"}},
		{"d n 17 300 x", protocol.Grant{Digest: "d", Next: "n"}},
	} {
		if got := protocol.ParseGrant(tt.payload); got != tt.want {
			t.Errorf("ParseGrant(%q) = %+v, want %+v", tt.payload, got, tt.want)
		}
	}
}
