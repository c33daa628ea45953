package protocol

import (
	"strconv"
	"strings"
	"time"
)

// Grant is what a "granted" message says (docs/protocol.md, Messages):
// the payload after "granted ".
type Grant struct {
	// Digest names the waiter handed the key (or a permit), ValueDigest of
	// its value; Next the waiter now first in line, "" for none.
	Digest, Next string
	// Counted: the release counted the hand-off (protocol 6). Counter is
	// then the key's hand-off counter after it (the fence it assigned),
	// History the counter's history (the server's replication ID: see
	// Attempt), PX the expiry it set, and Held, for a semaphore, its live
	// permits with this one (0 for a lock). A message without them
	// (protocols 3 to 5, or a counter that could not be incremented) means:
	// confirm first.
	Counted bool
	Counter int64
	History string
	PX      time.Duration
	Held    int
}

// ParseGrant reads a "granted" message's payload after "granted ":
// "<digest> [<next>|-] [<counter> <px> h<history> [<held>]]".
func ParseGrant(payload string) Grant {
	f := strings.Fields(payload)
	var g Grant
	if len(f) > 0 {
		g.Digest = f[0]
	}
	if len(f) > 1 && f[1] != "-" {
		g.Next = f[1]
	}
	if len(f) < 5 {
		return g
	}
	counter, err1 := strconv.ParseInt(f[2], 10, 64)
	px, err2 := strconv.ParseInt(f[3], 10, 64)
	history, ok := strings.CutPrefix(f[4], "h")
	if err1 != nil || err2 != nil || counter <= 0 || px <= 0 || !ok || history == "" {
		return g
	}
	if len(f) > 5 {
		held, err := strconv.Atoi(f[5])
		if err != nil || held <= 0 {
			return g
		}
		g.Held = held
	}
	g.Counted, g.Counter, g.History, g.PX = true, counter, history, time.Duration(px)*time.Millisecond
	return g
}
