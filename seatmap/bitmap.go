// Package seatmap is the browse plane's seat map: per-section snapshots as
// JSON and as a 2-bit-per-seat bitmap, a Redis cache in front of the read
// pool with a fill lease so a stampede of misses becomes one query, and a hub
// that pushes invalidations to WebSocket viewers from one upstream Pub/Sub
// subscription per active section.
//
// Everything here is advisory (docs/ARCHITECTURE.md rule 2): a stale map only costs the fan a 409
// on hold; nothing decides ownership from it.
package seatmap

import (
	"fmt"

	"github.com/encore-tickets/encore/vocab"
)

// seatCode is a status's 2-bit code: its index in vocab.SeatStatuses
// (0 available, 1 held, 2 sold, 3 blocked).
func seatCode(s vocab.SeatStatus) (byte, error) {
	for i, st := range vocab.SeatStatuses {
		if st == s {
			return byte(i), nil
		}
	}
	return 0, fmt.Errorf("seatmap: unknown seat status %q", s)
}

// EncodeBitmap packs statuses two bits a seat, four seats a byte, the most
// significant pair first: seat i is bits 7-6 of byte i/4 when i%4 == 0.
func EncodeBitmap(statuses []vocab.SeatStatus) ([]byte, error) {
	out := make([]byte, (len(statuses)+3)/4)
	for i, s := range statuses {
		code, err := seatCode(s)
		if err != nil {
			return nil, err
		}
		out[i/4] |= code << (6 - 2*uint(i%4))
	}
	return out, nil
}

// DecodeBitmap unpacks n statuses.
func DecodeBitmap(b []byte, n int) ([]vocab.SeatStatus, error) {
	if n < 0 || len(b) != (n+3)/4 {
		return nil, fmt.Errorf("seatmap: %d bytes cannot hold exactly %d seats", len(b), n)
	}
	out := make([]vocab.SeatStatus, n)
	for i := range out {
		out[i] = vocab.SeatStatuses[(b[i/4]>>(6-2*uint(i%4)))&3]
	}
	return out, nil
}
