// Package manifest is the venue gate's copy of an event's tickets: the valid
// tickets of paid bookings with their QR secrets, encrypted (AES-256-GCM),
// signed (Ed25519), versioned and expiring. A gate needs no connection to
// the buy plane: it imports a manifest file and verifies codes on its own.
//
// File layout (all integers big-endian):
//
//	"ENCMFST1" | uint32 n | header (n bytes of JSON) | nonce (12) | ciphertext | signature (64)
//
// The signature covers every byte before it, so one flipped bit anywhere is
// refused before anything is decrypted. The ciphertext is the gzipped JSON
// body sealed with the header as additional data. The header is readable
// without the encryption key: event, kind, version, expiry, counts and the
// ID (not the value) of the key that encrypts the body.
//
// Versions are the export snapshot's database time in microseconds. A full
// export lists every valid ticket and supersedes everything before it; a
// delta export from version B lists tickets issued and revoked since B (with
// an overlap, since applying a delta twice is harmless), and tickets whose
// codes moved to another device since B with their new generation, and
// applies to a gate that holds version B or later.
package manifest

import (
	"bytes"
	"compress/gzip"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/internal/keyenc"
	"github.com/encore-tickets/encore/tickets"
)

// Format names this layout in the header.
const Format = "encore-manifest/1"

const (
	magic      = "ENCMFST1"
	nonceSize  = 12
	maxHeader  = 64 << 10
	maxBodyRaw = 1 << 30 // a decompressed body larger than this is refused
)

// Kinds of manifest.
const (
	KindFull  = "full"
	KindDelta = "delta"
)

// Header is the signed, unencrypted part.
type Header struct {
	Format      string    `json:"format"`
	EventID     string    `json:"event_id"`
	Kind        string    `json:"kind"`
	Version     int64     `json:"version"`
	BaseVersion int64     `json:"base_version,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	TicketCount int       `json:"ticket_count"`
	RevokeCount int       `json:"revoked_count"`
	KeyID       string    `json:"key_id"`
	// Reentry is the event's rule: a ticket scanned out may come back in.
	Reentry bool `json:"reentry,omitempty"`
}

// Entry is one valid ticket.
type Entry struct {
	ID        string `json:"id"`
	SectionID string `json:"section_id"`
	SeatID    string `json:"seat_id,omitempty"`
	Secret    []byte `json:"secret"`
	// Generation is the device key's generation the fan's phone makes codes
	// with (tickets.DeviceKey): a code of an earlier one comes from a device
	// the ticket has left.
	Generation int64 `json:"generation,omitempty"`
	// Transferred marks a ticket handed to another fan (who holds a new
	// ticket): the gate refuses it with reason transferred.
	Transferred bool `json:"transferred,omitempty"`
	// Listed marks a ticket its holder has listed for resale: the gate
	// refuses it with reason listed until a later manifest lists it again
	// without the mark (the listing withdrawn or expired).
	Listed bool `json:"listed,omitempty"`
	// BookingCode and Attendee let door staff find a ticket whose code will
	// not scan (a dead phone): the booking's ID and the fan it names. Both
	// are empty in manifests made before they were added.
	BookingCode string `json:"booking_code,omitempty"`
	Attendee    string `json:"attendee,omitempty"`
}

// Body is the encrypted part.
type Body struct {
	Tickets []Entry  `json:"tickets"`
	Revoked []string `json:"revoked,omitempty"`
}

// Manifest is an opened manifest.
type Manifest struct {
	Header
	Body
}

// Keys are what export and import need. A gate that only verifies leaves
// Signing nil.
type Keys struct {
	Encryption []byte
	Signing    ed25519.PrivateKey
	Verify     ed25519.PublicKey
}

// NewKeys builds keys from a 32-byte AES key and a 32-byte Ed25519 seed.
func NewKeys(encryption, signingSeed []byte) (Keys, error) {
	if len(encryption) != tickets.KeySize {
		return Keys{}, fmt.Errorf("manifest: encryption key is %d bytes, want %d", len(encryption), tickets.KeySize)
	}
	if len(signingSeed) != ed25519.SeedSize {
		return Keys{}, fmt.Errorf("manifest: signing seed is %d bytes, want %d", len(signingSeed), ed25519.SeedSize)
	}
	priv := ed25519.NewKeyFromSeed(signingSeed)
	return Keys{Encryption: encryption, Signing: priv, Verify: priv.Public().(ed25519.PublicKey)}, nil
}

// KeysFromConfig reads ENCORE_MANIFEST_KEY and ENCORE_MANIFEST_SIGNING_SEED.
func KeysFromConfig(cfg config.Config) (Keys, error) {
	enc, err := tickets.ParseKey(cfg.ManifestKey.Reveal())
	if err != nil {
		return Keys{}, fmt.Errorf("ENCORE_MANIFEST_KEY: %w", err)
	}
	seed, err := tickets.ParseKey(cfg.ManifestSigningSeed.Reveal())
	if err != nil {
		return Keys{}, fmt.Errorf("ENCORE_MANIFEST_SIGNING_SEED: %w", err)
	}
	return NewKeys(enc, seed)
}

// KeyID is the hex ID of an encryption key, as the header carries it.
func KeyID(key []byte) string {
	id := tickets.KeyID(key)
	return hex.EncodeToString(id[:])
}

// Errors of Open. Each message says what to do.
var (
	ErrNotManifest = errors.New("manifest: not an Encore manifest (wrong magic, truncated or malformed)")
	ErrSignature   = errors.New("manifest: signature does not verify: the file was altered or signed with another key; refusing it")
	ErrDecrypt     = errors.New("manifest: body does not decrypt under this key")
)

// ExpiredError refuses a manifest past its expiry.
type ExpiredError struct{ ExpiresAt, Now time.Time }

func (e *ExpiredError) Error() string {
	return fmt.Sprintf("manifest: expired at %s (now %s); export a fresh one",
		e.ExpiresAt.UTC().Format(time.RFC3339), e.Now.UTC().Format(time.RFC3339))
}

// WrongKeyError refuses a manifest encrypted under another key.
type WrongKeyError struct{ Manifest, Ours string }

func (e *WrongKeyError) Error() string {
	return fmt.Sprintf("manifest: encrypted under key %s but this gate's ENCORE_MANIFEST_KEY is %s; configure the exporting side's key",
		e.Manifest, e.Ours)
}

// Seal encrypts and signs m. Header counts, format and key ID are filled in.
func Seal(m Manifest, keys Keys) ([]byte, error) {
	if keys.Signing == nil {
		return nil, errors.New("manifest: no signing key")
	}
	if m.Kind != KindFull && m.Kind != KindDelta {
		return nil, fmt.Errorf("manifest: kind %q", m.Kind)
	}
	m.Format, m.TicketCount, m.RevokeCount, m.KeyID = Format, len(m.Body.Tickets), len(m.Body.Revoked), KeyID(keys.Encryption)
	if m.Body.Tickets == nil {
		m.Body.Tickets = []Entry{}
	}
	header, err := json.Marshal(m.Header)
	if err != nil {
		return nil, err
	}
	var plain bytes.Buffer
	zw := gzip.NewWriter(&plain)
	if err := json.NewEncoder(zw).Encode(m.Body); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	aead, err := newAEAD(keys.Encryption)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(magic)+4+len(header)+nonceSize+plain.Len()+aead.Overhead()+ed25519.SignatureSize)
	out = append(out, magic...)
	out = binary.BigEndian.AppendUint32(out, uint32(len(header)))
	out = append(out, header...)
	nonce := make([]byte, nonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	out = append(out, nonce...)
	out = aead.Seal(out, nonce, plain.Bytes(), header)
	return append(out, ed25519.Sign(keys.Signing, out)...), nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	aead, err := keyenc.NewGCM(key)
	if err != nil {
		return nil, fmt.Errorf("manifest: encryption key: %w", err)
	}
	return aead, nil
}

// split checks the structure and the signature and returns the parts.
func split(data []byte, verify ed25519.PublicKey) (header, nonce, ciphertext []byte, err error) {
	if len(verify) != ed25519.PublicKeySize {
		return nil, nil, nil, errors.New("manifest: no verification key")
	}
	if len(data) < len(magic)+4+nonceSize+ed25519.SignatureSize || string(data[:len(magic)]) != magic {
		return nil, nil, nil, ErrNotManifest
	}
	n := binary.BigEndian.Uint32(data[len(magic):])
	signed, sig := data[:len(data)-ed25519.SignatureSize], data[len(data)-ed25519.SignatureSize:]
	if !ed25519.Verify(verify, signed, sig) {
		return nil, nil, nil, ErrSignature
	}
	rest := signed[len(magic)+4:]
	if n > maxHeader || int(n) > len(rest)-nonceSize {
		return nil, nil, nil, ErrNotManifest
	}
	return rest[:n], rest[n : n+nonceSize], rest[n+nonceSize:], nil
}

// ReadHeader verifies the signature and returns the header, without
// decrypting the body or checking expiry.
func ReadHeader(data []byte, verify ed25519.PublicKey) (Header, error) {
	raw, _, _, err := split(data, verify)
	if err != nil {
		return Header{}, err
	}
	var h Header
	if err := json.Unmarshal(raw, &h); err != nil || h.Format != Format {
		return Header{}, ErrNotManifest
	}
	return h, nil
}

// Open verifies, checks expiry against now, and decrypts.
func Open(data []byte, keys Keys, now time.Time) (*Manifest, error) {
	raw, nonce, ciphertext, err := split(data, keys.Verify)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(raw, &m.Header); err != nil || m.Format != Format {
		return nil, ErrNotManifest
	}
	if !now.Before(m.ExpiresAt) {
		return nil, &ExpiredError{ExpiresAt: m.ExpiresAt, Now: now}
	}
	if ours := KeyID(keys.Encryption); m.KeyID != ours {
		return nil, &WrongKeyError{Manifest: m.KeyID, Ours: ours}
	}
	aead, err := newAEAD(keys.Encryption)
	if err != nil {
		return nil, err
	}
	plain, err := aead.Open(nil, nonce, ciphertext, raw)
	if err != nil {
		return nil, ErrDecrypt
	}
	zr, err := gzip.NewReader(bytes.NewReader(plain))
	if err != nil {
		return nil, ErrNotManifest
	}
	dec := json.NewDecoder(io.LimitReader(zr, maxBodyRaw))
	if err := dec.Decode(&m.Body); err != nil {
		return nil, ErrNotManifest
	}
	if len(m.Body.Tickets) != m.TicketCount || len(m.Body.Revoked) != m.RevokeCount {
		return nil, ErrNotManifest
	}
	for _, e := range m.Body.Tickets {
		if !tickets.ValidID(e.ID) || len(e.Secret) != tickets.SecretSize || e.Generation < 0 || e.Generation > tickets.MaxGeneration {
			return nil, fmt.Errorf("manifest: ticket %q is malformed", e.ID)
		}
	}
	return &m, nil
}
