// Package tickets holds what makes a ticket hard to copy: its ID, its own
// random secret (sealed with AES-256-GCM under a configured key before it is
// stored) and the rotating code shown as its QR, an HMAC-SHA256 over the
// ticket ID and a 15-second window keyed with that secret.
//
// The booking saga calls NewTicketID, NewSecret and Keyring.Seal when it
// issues tickets; the API opens the secret to show the code; the manifest
// export opens it to hand it to the venue gate, which verifies codes offline.
package tickets

import (
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"

	"github.com/encore-tickets/encore/internal/keyenc"
)

// SecretSize is the length of a ticket's secret in bytes.
const SecretSize = 32

// KeySize is the length of an AES-256 key in bytes.
const KeySize = 32

// NewSecret returns a fresh random ticket secret.
func NewSecret() ([]byte, error) {
	s := make([]byte, SecretSize)
	if _, err := rand.Read(s); err != nil {
		return nil, fmt.Errorf("tickets: secret: %w", err)
	}
	return s, nil
}

// IDPrefix starts every ticket ID.
const IDPrefix = "tkt_"

// idChars is the lowercase RFC 4648 base32 alphabet; idLen characters carry
// 100 random bits.
const (
	idChars = "abcdefghijklmnopqrstuvwxyz234567"
	idLen   = 20
)

// NewTicketID returns "tkt_" and 20 random base32 characters.
func NewTicketID() string {
	b := make([]byte, idLen)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	out := make([]byte, 0, len(IDPrefix)+idLen)
	out = append(out, IDPrefix...)
	for _, c := range b {
		out = append(out, idChars[c&31]) // 256 is a multiple of 32: uniform
	}
	return string(out)
}

// ValidID reports whether s has the shape NewTicketID gives.
func ValidID(s string) bool {
	rest, ok := strings.CutPrefix(s, IDPrefix)
	if !ok || len(rest) != idLen {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if strings.IndexByte(idChars, rest[i]) < 0 {
			return false
		}
	}
	return true
}

// ParseKey decodes a 32-byte key from configuration: 64 hex characters, or
// standard or URL-safe base64.
func ParseKey(s string) ([]byte, error) {
	key, err := keyenc.Decode(s, KeySize)
	if err != nil {
		return nil, fmt.Errorf("tickets: a key %w", err)
	}
	return key, nil
}

// Errors of Keyring.Open.
var (
	// ErrWrongKey means the value was sealed under a key this keyring lacks.
	ErrWrongKey = errors.New("tickets: sealed under a key this keyring does not hold")
	// ErrSealed means the value is malformed, altered, or bound to another ticket.
	ErrSealed = errors.New("tickets: sealed value does not open (altered, truncated or another ticket's)")
)

// sealed layout: version(1) | key ID(4) | nonce(12) | ciphertext+tag.
const (
	sealVersion = 1
	keyIDSize   = 4
)

// Keyring seals ticket secrets with AES-256-GCM. It seals under its first
// key and opens under any of its keys, so a key can be rotated by putting
// the new one first and keeping the old ones until every secret is resealed.
type Keyring struct {
	primary keyEntry
	all     map[[keyIDSize]byte]cipher.AEAD
}

type keyEntry struct {
	id   [keyIDSize]byte
	aead cipher.AEAD
}

// KeyID names a key without revealing it: the first bytes of its SHA-256.
func KeyID(key []byte) [keyIDSize]byte {
	sum := sha256.Sum256(append([]byte("encore-key-id:"), key...))
	return [keyIDSize]byte(sum[:keyIDSize])
}

// NewKeyring builds a keyring sealing under key; previous keys still open.
func NewKeyring(key []byte, previous ...[]byte) (*Keyring, error) {
	k := &Keyring{all: map[[keyIDSize]byte]cipher.AEAD{}}
	for i, raw := range append([][]byte{key}, previous...) {
		if len(raw) != KeySize {
			return nil, fmt.Errorf("tickets: key %d is %d bytes, want %d", i, len(raw), KeySize)
		}
		aead, err := keyenc.NewGCM(raw)
		if err != nil {
			return nil, err
		}
		e := keyEntry{id: KeyID(raw), aead: aead}
		if i == 0 {
			k.primary = e
		}
		if _, dup := k.all[e.id]; !dup {
			k.all[e.id] = aead
		}
	}
	return k, nil
}

// Mint makes a new ticket's key material: a fresh ID and a fresh secret,
// sealed for that ID. Every ticket a sale, a transfer or a resale issues
// comes from here, so no two holders ever share a secret.
func (k *Keyring) Mint() (id string, sealed []byte, err error) {
	id = NewTicketID()
	secret, err := NewSecret()
	if err != nil {
		return "", nil, err
	}
	if sealed, err = k.Seal(secret, id); err != nil {
		return "", nil, fmt.Errorf("%w: %v", ErrSealing, err)
	}
	return id, sealed, nil
}

// Seal encrypts secret, bound to ticketID as additional data, so a sealed
// secret copied onto another ticket's row does not open.
func (k *Keyring) Seal(secret []byte, ticketID string) ([]byte, error) {
	ns := k.primary.aead.NonceSize()
	out := make([]byte, 1+keyIDSize+ns, 1+keyIDSize+ns+len(secret)+k.primary.aead.Overhead())
	out[0] = sealVersion
	copy(out[1:], k.primary.id[:])
	if _, err := rand.Read(out[1+keyIDSize:]); err != nil {
		return nil, fmt.Errorf("tickets: nonce: %w", err)
	}
	nonce := out[1+keyIDSize:]
	return k.primary.aead.Seal(out, nonce, secret, []byte(ticketID)), nil
}

// Open decrypts what Seal produced for the same ticket ID.
func (k *Keyring) Open(sealed []byte, ticketID string) ([]byte, error) {
	ns := k.primary.aead.NonceSize()
	if len(sealed) < 1+keyIDSize+ns+k.primary.aead.Overhead() || sealed[0] != sealVersion {
		return nil, ErrSealed
	}
	aead, ok := k.all[[keyIDSize]byte(sealed[1:1+keyIDSize])]
	if !ok {
		return nil, ErrWrongKey
	}
	nonce := sealed[1+keyIDSize : 1+keyIDSize+ns]
	out, err := aead.Open(nil, nonce, sealed[1+keyIDSize+ns:], []byte(ticketID))
	if err != nil {
		return nil, ErrSealed
	}
	return out, nil
}
