package gate

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// MinDeviceTokenBytes is the shortest scanner token accepted: as long as
// NewDeviceToken's, far past guessing over a venue LAN.
const MinDeviceTokenBytes = 32

// Devices are the scanners allowed to call the gate: each a device ID and
// a bearer token (ENCORE_GATE_TOKENS). Only the tokens' SHA-256 digests are
// kept. Device pairing will issue and revoke entries; the check stays this
// one.
type Devices struct {
	ids     []string
	digests [][sha256.Size]byte
}

// ParseDevices reads "device:token,device:token". An empty list is an
// error: a gate that admits scans from anyone is what this guards against.
func ParseDevices(list string) (*Devices, error) {
	d := &Devices{}
	for _, entry := range strings.Split(list, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		id, token, ok := strings.Cut(entry, ":")
		if !ok || !gateIDPattern.MatchString(id) {
			return nil, errors.New("gate devices: each entry is device:token, the device letters, digits, '_', '-', '.' (at most 64)")
		}
		if len(token) < MinDeviceTokenBytes {
			// Never the token itself: this error is printed.
			return nil, fmt.Errorf("gate devices: the token of %q is shorter than %d bytes", id, MinDeviceTokenBytes)
		}
		for _, have := range d.ids {
			if have == id {
				return nil, fmt.Errorf("gate devices: device %q given twice", id)
			}
		}
		d.ids = append(d.ids, id)
		d.digests = append(d.digests, sha256.Sum256([]byte(token)))
	}
	if len(d.ids) == 0 {
		return nil, errors.New("gate devices: none configured")
	}
	return d, nil
}

// NewDeviceToken is a fresh scanner token: 32 random bytes in hex.
func NewDeviceToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// Authenticate returns the device whose token the request's
// Authorization: Bearer carries. Every configured digest is compared, in
// constant time, so the answer's timing tells nothing of which token (or
// how much of one) was close. A nil Devices accepts no one.
func (d *Devices) Authenticate(r *http.Request) (string, bool) {
	if d == nil {
		return "", false
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	got := sha256.Sum256([]byte(token))
	match := -1
	for i := range d.digests {
		if subtle.ConstantTimeCompare(got[:], d.digests[i][:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return "", false
	}
	return d.ids[match], true
}
