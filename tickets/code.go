package tickets

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// The rotating code. A payload is
//
//	<ticket ID> "." <window> "." <64 lowercase hex: HMAC-SHA256(secret, "<ticket ID>:<window>")>
//
// where window is Unix seconds / 15. The verifier accepts the current window
// and one either side (clock drift between phone and scanner), so a code is
// good for 30 to 45 seconds: a screenshot goes stale within a minute.
const (
	// WindowLength is how long one code is shown.
	WindowLength = 15 * time.Second
	// Tolerance is how many windows either side of the verifier's are accepted.
	Tolerance = 1
	// MaxPayloadLen bounds what ParsePayload reads.
	MaxPayloadLen = len(IDPrefix) + idLen + 1 + 19 + 1 + 2*sha256.Size
)

// Verification errors. Both ErrMalformed and ErrBadMAC mean "invalid code".
var (
	ErrMalformed = errors.New("tickets: not a ticket code")
	ErrBadMAC    = errors.New("tickets: code does not match the ticket's secret")
	ErrStale     = errors.New("tickets: code is outside the accepted time windows")
)

// Code is a parsed payload.
type Code struct {
	TicketID string
	Window   int64
	MAC      [sha256.Size]byte
}

// WindowAt is the window number of t.
func WindowAt(t time.Time) int64 {
	s := t.Unix()
	w := int64(WindowLength / time.Second)
	if s < 0 {
		return (s - w + 1) / w // floor for times before 1970
	}
	return s / w
}

// windowEnd is the first instant after window w.
func windowEnd(w int64) time.Time {
	return time.Unix((w+1)*int64(WindowLength/time.Second), 0).UTC()
}

func mac(secret []byte, ticketID string, window int64) [sha256.Size]byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ticketID))
	m.Write([]byte{':'})
	m.Write(strconv.AppendInt(nil, window, 10))
	return [sha256.Size]byte(m.Sum(nil))
}

// Payload is the code to show at now, and the instant it stops being the
// current one (the app fetches the next one then).
func Payload(ticketID string, secret []byte, now time.Time) (payload string, expiresAt time.Time) {
	w := WindowAt(now)
	return Code{TicketID: ticketID, Window: w, MAC: mac(secret, ticketID, w)}.String(), windowEnd(w)
}

// String renders the payload.
func (c Code) String() string {
	var b strings.Builder
	b.Grow(MaxPayloadLen)
	b.WriteString(c.TicketID)
	b.WriteByte('.')
	b.WriteString(strconv.FormatInt(c.Window, 10))
	b.WriteByte('.')
	b.WriteString(hex.EncodeToString(c.MAC[:]))
	return b.String()
}

// ParsePayload reads a payload strictly: a well-formed ticket ID, a window
// in canonical decimal (no sign, no leading zero), and exactly 64 lowercase
// hex digits. Anything else is ErrMalformed; every accepted payload renders
// back to itself.
func ParsePayload(s string) (Code, error) {
	if len(s) > MaxPayloadLen {
		return Code{}, ErrMalformed
	}
	id, rest, ok := strings.Cut(s, ".")
	if !ok || !ValidID(id) {
		return Code{}, ErrMalformed
	}
	ws, hx, ok := strings.Cut(rest, ".")
	if !ok || len(ws) == 0 || len(ws) > 19 || (ws[0] == '0' && len(ws) > 1) || len(hx) != 2*sha256.Size {
		return Code{}, ErrMalformed
	}
	for i := 0; i < len(ws); i++ {
		if ws[i] < '0' || ws[i] > '9' {
			return Code{}, ErrMalformed
		}
	}
	w, err := strconv.ParseInt(ws, 10, 64)
	if err != nil {
		return Code{}, ErrMalformed
	}
	c := Code{TicketID: id, Window: w}
	for i := 0; i < len(hx); i++ {
		if ch := hx[i]; !(ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'f') {
			return Code{}, ErrMalformed
		}
	}
	if _, err := hex.Decode(c.MAC[:], []byte(hx)); err != nil {
		return Code{}, ErrMalformed
	}
	return c, nil
}

// Verify checks the code against the ticket's secret (ErrBadMAC) and its
// window against now: the current window and Tolerance either side pass,
// anything older or newer is ErrStale.
func (c Code) Verify(secret []byte, now time.Time) error {
	want := mac(secret, c.TicketID, c.Window)
	if !hmac.Equal(want[:], c.MAC[:]) {
		return ErrBadMAC
	}
	d := WindowAt(now) - c.Window
	if d < -Tolerance || d > Tolerance {
		return ErrStale
	}
	return nil
}

// Verify parses payload and checks it against secret at now.
func Verify(payload string, secret []byte, now time.Time) (Code, error) {
	c, err := ParsePayload(payload)
	if err != nil {
		return Code{}, err
	}
	return c, c.Verify(secret, now)
}
