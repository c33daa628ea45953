package lockctl

import (
	"fmt"
	"io"
)

// printf writes one of lockctl's messages: a report on stdout, or a
// diagnostic on stderr. A failed write is deliberately dropped: lockctl's
// exit code says what happened to the lock and to COMMAND, not whether a
// terminal or pipe was still there to read a message. Output whose loss must
// fail the command goes through a writer whose error is checked (status's
// JSON encoder, its tabwriter's Flush).
func printf(w io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(w, format, args...)
}
