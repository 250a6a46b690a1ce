// Package redisslot computes the Redis Cluster hash slot of a key, as the
// cluster does: CRC16 (XMODEM) of the key's hash tag, the part between the
// first { and the next } when that part is not empty, else of the whole key,
// modulo 16384. A script or transaction may touch several keys on a cluster
// only when they share one slot, so Encore keeps an event's keys under the
// tag {event}.
package redisslot

import "strings"

// Slots is how many hash slots a Redis Cluster has.
const Slots = 16384

// Slot is the hash slot of key.
func Slot(key string) int {
	return int(crc16(Tag(key)) % Slots)
}

// Tag is the part of key that decides its slot.
func Tag(key string) string {
	if s := strings.IndexByte(key, '{'); s >= 0 {
		if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
			return key[s+1 : s+1+e]
		}
	}
	return key
}

// Same reports whether every key is in one slot (true for none or one).
func Same(keys ...string) bool {
	for _, k := range keys[min(1, len(keys)):] {
		if Slot(k) != Slot(keys[0]) {
			return false
		}
	}
	return true
}

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
