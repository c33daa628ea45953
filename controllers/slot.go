/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"strconv"
	"strings"
)

// slotsContain reports whether ranges ("0-5460,10923", as slotRanges
// writes them into status.endpoints[].slots) include slot.
func slotsContain(ranges string, slot int) bool {
	for r := range strings.SplitSeq(ranges, ",") {
		lo, hi, found := strings.Cut(strings.TrimSpace(r), "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if found {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		if a <= slot && slot <= b {
			return true
		}
	}
	return false
}
