package protocol

import "time"

// Constants are the arguments a client sends unchanged on every call (its
// TTL, hand-off window, place in line and identity), each put in an
// interface once. A number above 255 or a string made at run time is
// copied to the heap every time it goes into an interface: three of an
// uncontended acquire+release's allocations, four of a waiter's. A nil
// *Constants boxes every argument at every call.
type Constants struct {
	ttl, window, place          time.Duration
	identity                    string
	ttlArg, windowArg, placeArg any
	identityArg                 any
}

// NewConstants boxes ttl, window, place and identity once.
func NewConstants(ttl, window, place time.Duration, identity string) *Constants {
	return &Constants{ttl: ttl, window: window, place: place, identity: identity,
		ttlArg: Millis(ttl), windowArg: Millis(window), placeArg: Millis(place), identityArg: identity}
}

// millis is Millis(d) in an interface: a boxed constant when d is one.
func (c *Constants) millis(d time.Duration) any {
	if c != nil {
		switch d {
		case c.ttl:
			return c.ttlArg
		case c.window:
			return c.windowArg
		case c.place:
			return c.placeArg
		}
	}
	return Millis(d)
}

// str is s in an interface: the boxed identity when s is it.
func (c *Constants) str(s string) any {
	if c != nil && s == c.identity {
		return c.identityArg
	}
	return s
}
