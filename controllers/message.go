package controllers

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// maxMessage bounds condition messages and Event notes. The API server
// refuses a condition message over 32 KiB (and the whole status patch with
// it, freezing status) and an Event note over 1 KiB; a list of 64 failing
// endpoints would pass both.
const maxMessage = 1024

// joinBounded joins items with sep while the result stays under budget
// bytes, then says how many it left out: "a; b; …and 7 more".
func joinBounded(items []string, sep string, budget int) string {
	var b strings.Builder
	for i, it := range items {
		more := fmt.Sprintf("%s…and %d more", sep, len(items)-i)
		if i > 0 && b.Len()+len(sep)+len(it)+len(more) > budget {
			return b.String() + more
		}
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(it)
	}
	return b.String()
}

// joinList joins a list that goes into a condition message.
func joinList(items []string) string { return joinBounded(items, "; ", maxMessage*3/4) }

// capMessage cuts s to at most maxMessage bytes, on a rune boundary.
func capMessage(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	const mark = "… (cut)"
	cut := maxMessage - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// boundedRecorder caps every Event note at maxMessage: the events API
// refuses longer notes, and the Event would be lost.
type boundedRecorder struct{ events.EventRecorder }

// Eventf formats the note, caps it, and records the Event.
func (r boundedRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, "%s", capMessage(fmt.Sprintf(note, args...)))
}
