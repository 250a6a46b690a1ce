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
//	<ticket ID> "." <window> "." <64 lowercase hex: HMAC-SHA256(key, "<ticket ID>:<window>")>
//	<ticket ID> "." <window> "." <generation> "." <64 lowercase hex: HMAC-SHA256(key, "<ticket ID>:<window>")>
//
// where window is Unix seconds / 15. The first form is made by the server
// with the ticket's own secret as the key (generation 0). The second is made
// on the fan's phone, offline, with a device key (DeviceKey) that the wallet
// hands to one device at a time: the generation counts the devices the
// ticket has been moved to, so a code of an earlier generation comes from a
// device the ticket has left, and the gate, which knows the secret and the
// latest generation its manifest listed, refuses it. The verifier accepts
// the current window and one either side (clock drift between phone and
// scanner), so a code is good for 30 to 45 seconds: a screenshot goes stale
// within two periods.
const (
	// WindowLength is how long one code is shown.
	WindowLength = 15 * time.Second
	// Tolerance is how many windows either side of the verifier's are accepted.
	Tolerance = 1
	// MaxGeneration bounds a code's generation (nine decimal digits).
	MaxGeneration = 999_999_999
	// MaxPayloadLen bounds what ParsePayload reads.
	MaxPayloadLen = len(IDPrefix) + idLen + 1 + 19 + 1 + 9 + 1 + 2*sha256.Size
)

// Algorithm names the code's construction, as the wallet hands it to a
// device with its key.
const Algorithm = "HMAC-SHA256"

// CodeFormat describes a device's payload for the wallet's clients.
const CodeFormat = "<ticket_id>.<floor(unix_seconds/period_seconds)>.<generation>.<hex HMAC-SHA256(key, ticket_id + ':' + window)>"

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
	// Generation is the device key's (DeviceKey); 0 for a code the server
	// made with the ticket's secret.
	Generation int64
	MAC        [sha256.Size]byte
}

// DeviceKey is the key a ticket's codes are made with at a generation: the
// secret itself at 0 (codes the server makes, never handed out), otherwise
// HMAC-SHA256(secret, "encore device key" 0 ticketID 0 generation). A device
// holds only its generation's key, from which neither the secret nor another
// generation's key can be worked out.
func DeviceKey(secret []byte, ticketID string, generation int64) []byte {
	if generation == 0 {
		return secret
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("encore device key\x00"))
	m.Write([]byte(ticketID))
	m.Write([]byte{0})
	m.Write(strconv.AppendInt(nil, generation, 10))
	return m.Sum(nil)
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
	return DevicePayload(ticketID, secret, 0, now)
}

// DevicePayload is the code a device holding generation's key shows at now
// (what the fan's phone computes offline), made from the ticket's secret.
func DevicePayload(ticketID string, secret []byte, generation int64, now time.Time) (payload string, expiresAt time.Time) {
	w := WindowAt(now)
	key := DeviceKey(secret, ticketID, generation)
	return Code{TicketID: ticketID, Window: w, Generation: generation, MAC: mac(key, ticketID, w)}.String(), windowEnd(w)
}

// String renders the payload.
func (c Code) String() string {
	var b strings.Builder
	b.Grow(MaxPayloadLen)
	b.WriteString(c.TicketID)
	b.WriteByte('.')
	b.WriteString(strconv.FormatInt(c.Window, 10))
	b.WriteByte('.')
	if c.Generation > 0 {
		b.WriteString(strconv.FormatInt(c.Generation, 10))
		b.WriteByte('.')
	}
	b.WriteString(hex.EncodeToString(c.MAC[:]))
	return b.String()
}

// ParsePayload reads a payload strictly: a well-formed ticket ID, a window
// in canonical decimal (no sign, no leading zero), for a device's code a
// generation from 1 to MaxGeneration in canonical decimal, and exactly 64
// lowercase hex digits. Anything else is ErrMalformed; every accepted
// payload renders back to itself.
func ParsePayload(s string) (Code, error) {
	if len(s) > MaxPayloadLen {
		return Code{}, ErrMalformed
	}
	parts := strings.Split(s, ".")
	if (len(parts) != 3 && len(parts) != 4) || !ValidID(parts[0]) {
		return Code{}, ErrMalformed
	}
	w, ok := canonicalInt(parts[1], 19)
	if !ok {
		return Code{}, ErrMalformed
	}
	c := Code{TicketID: parts[0], Window: w}
	if len(parts) == 4 {
		g, ok := canonicalInt(parts[2], 9)
		if !ok || g == 0 {
			return Code{}, ErrMalformed
		}
		c.Generation = g
	}
	hx := parts[len(parts)-1]
	if len(hx) != 2*sha256.Size {
		return Code{}, ErrMalformed
	}
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

// canonicalInt reads a non-negative decimal of at most digits digits with
// no sign and no leading zero.
func canonicalInt(s string, digits int) (int64, bool) {
	if len(s) == 0 || len(s) > digits || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// Verify checks the code against the ticket's secret (ErrBadMAC: through
// the device key of the code's generation) and its window against now: the
// current window and Tolerance either side pass, anything older or newer is
// ErrStale. Whether the generation is still the ticket's is the caller's
// check: only it knows the latest.
func (c Code) Verify(secret []byte, now time.Time) error {
	want := mac(DeviceKey(secret, c.TicketID, c.Generation), c.TicketID, c.Window)
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
