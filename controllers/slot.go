/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"strconv"
	"strings"
)

// clusterSlots is the number of Redis Cluster hash slots.
const clusterSlots = 16384

// keySlot is the Redis Cluster hash slot of key: CRC16 (XMODEM) of the
// key's hash tag (the part between the first '{' and the next '}', when
// not empty) or of the whole key, modulo 16384. A lock on a store finds
// its key's master from the store's status with it, without asking the
// servers.
func keySlot(key string) int {
	if s := strings.IndexByte(key, '{'); s >= 0 {
		if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
			key = key[s+1 : s+1+e]
		}
	}
	return int(crc16(key)) % clusterSlots
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial 0), as Redis Cluster
// uses it.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

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
