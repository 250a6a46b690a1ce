package gate

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Pairing: encore gate pair writes a short code into the ledger; a scanner
// app sends it to POST /v1/pair and gets a device token of its own. Gate
// processes on one host share the ledger file, so a code written beside a
// running gate is good at once.

// PairingAlphabet is what pairing codes are made of: digits and capitals
// without 0/O, 1/I/L and U, so a code read aloud or off a screen is typed right.
const PairingAlphabet = "23456789ABCDEFGHJKMNPQRSTVWXYZ"

// PairingCodeLength is a code's length: 30^8 (6.6e11) codes, against a
// handful of guesses a minute (Server rate-limits POST /v1/pair) during the
// code's ten minutes.
const PairingCodeLength = 8

// PairingTTL is how long a code is good for.
const PairingTTL = 10 * time.Minute

// ErrPairingCode refuses a code that is unknown, used or expired; which one
// is not said, so answers tell a guesser nothing.
var ErrPairingCode = errors.New("gate: the pairing code is unknown, used or expired")

// ErrNoDevice: no paired device has that ID (or name).
var ErrNoDevice = errors.New("gate: no such paired device")

// NormalizePairingCode upper-cases a typed code and drops spaces and dashes
// ("abcd-efgh" is "ABCDEFGH"); it reports whether the result can be a code.
func NormalizePairingCode(typed string) (string, bool) {
	code := strings.ToUpper(strings.NewReplacer("-", "", " ", "").Replace(typed))
	if len(code) != PairingCodeLength {
		return code, false
	}
	for _, c := range code {
		if !strings.ContainsRune(PairingAlphabet, c) {
			return code, false
		}
	}
	return code, true
}

// FormatPairingCode shows a code in two groups of four, to read out.
func FormatPairingCode(code string) string {
	if len(code) != PairingCodeLength {
		return code
	}
	return code[:4] + "-" + code[4:]
}

// ValidDeviceName says whether a scanner's name is one to show staff: 1 to
// 64 printable characters.
func ValidDeviceName(name string) bool {
	if name == "" || utf8.RuneCountInString(name) > 64 || !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

func randomString(alphabet string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	for i := range b {
		// 256 is not a multiple of len(alphabet): draw again above the
		// last whole multiple so every character is as likely.
		for int(b[i]) >= 256-256%len(alphabet) {
			var one [1]byte
			_, _ = rand.Read(one[:])
			b[i] = one[0]
		}
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

func digest(s string) []byte {
	d := sha256.Sum256([]byte(s))
	return d[:]
}

// NewPairingCode writes a fresh single-use code for a scanner to be named
// name, good until now+ttl (PairingTTL when ttl <= 0), and returns it.
func (s *Store) NewPairingCode(ctx context.Context, name string, now time.Time, ttl time.Duration) (string, time.Time, error) {
	if !ValidDeviceName(name) {
		return "", time.Time{}, errors.New("gate: a device name is 1 to 64 printable characters")
	}
	if ttl <= 0 {
		ttl = PairingTTL
	}
	code := randomString(PairingAlphabet, PairingCodeLength)
	exp := now.Add(ttl)
	// Expired codes are of no use to anyone: drop them on the way.
	if _, err := s.write.ExecContext(ctx, `DELETE FROM pairing_codes WHERE expires_at <= ? AND used_at IS NULL`, now.UnixMilli()); err != nil {
		return "", time.Time{}, err
	}
	_, err := s.write.ExecContext(ctx, `INSERT INTO pairing_codes (code_sha256, name, created_at, expires_at) VALUES (?, ?, ?, ?)`,
		digest(code), name, now.UnixMilli(), exp.UnixMilli())
	return code, exp.UTC(), err
}

// Device is a paired scanner.
type Device struct {
	ID        string     `json:"device_id"`
	Name      string     `json:"name"`
	PairedAt  time.Time  `json:"paired_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// Pair spends a code (once: the UPDATE that marks it used decides) and
// records a new device with a fresh token, returned here and never again;
// the ledger keeps its SHA-256. The code's name wins over the one the
// scanner offers.
func (s *Store) Pair(ctx context.Context, code, offered string, now time.Time) (Device, string, error) {
	code, ok := NormalizePairingCode(code)
	if !ok {
		return Device{}, "", ErrPairingCode
	}
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return Device{}, "", err
	}
	defer func() { _ = tx.Rollback() }()
	d := Device{ID: "scn_" + strings.ToLower(randomString(PairingAlphabet, 10)), PairedAt: now.UTC()}
	err = tx.QueryRowContext(ctx, `UPDATE pairing_codes SET used_at = ?, device_id = ?
		WHERE code_sha256 = ? AND used_at IS NULL AND expires_at > ? RETURNING name`,
		now.UnixMilli(), d.ID, digest(code), now.UnixMilli()).Scan(&d.Name)
	if errors.Is(err, sql.ErrNoRows) {
		return Device{}, "", ErrPairingCode
	}
	if err != nil {
		return Device{}, "", err
	}
	if d.Name == "" {
		d.Name = offered
	}
	if !ValidDeviceName(d.Name) {
		d.Name = d.ID
	}
	token := NewDeviceToken()
	if _, err := tx.ExecContext(ctx, `INSERT INTO devices (id, name, token_sha256, paired_at) VALUES (?, ?, ?, ?)`,
		d.ID, d.Name, digest(token), now.UnixMilli()); err != nil {
		return Device{}, "", err
	}
	return d, token, tx.Commit()
}

// pairedDevice is the live (unrevoked) device whose token this is; found
// false for any other token. Read on every request, so a revocation holds
// from the next one.
func (s *Store) pairedDevice(ctx context.Context, token string) (string, bool, error) {
	var id string
	err := s.read.QueryRowContext(ctx, `SELECT id FROM devices WHERE token_sha256 = ? AND revoked_at IS NULL`, digest(token)).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return id, err == nil, err
}

// Devices lists every paired device, revoked ones too, oldest first.
func (s *Store) Devices(ctx context.Context) ([]Device, error) {
	return queryAll(ctx, s.read, `SELECT id, name, paired_at, revoked_at FROM devices ORDER BY paired_at, id`,
		func(rows *sql.Rows) (Device, error) {
			var d Device
			var paired int64
			var revoked sql.NullInt64
			err := rows.Scan(&d.ID, &d.Name, &paired, &revoked)
			d.PairedAt = time.UnixMilli(paired).UTC()
			if revoked.Valid {
				at := time.UnixMilli(revoked.Int64).UTC()
				d.RevokedAt = &at
			}
			return d, err
		})
}

// RevokeDevice revokes a paired device, named by its ID or, when exactly
// one live device has it, its name. Its next request is refused.
func (s *Store) RevokeDevice(ctx context.Context, idOrName string, now time.Time) (Device, error) {
	all, err := s.Devices(ctx)
	if err != nil {
		return Device{}, err
	}
	var match []Device
	for _, d := range all {
		if d.ID == idOrName {
			match = []Device{d}
			break
		}
		if d.Name == idOrName && d.RevokedAt == nil {
			match = append(match, d)
		}
	}
	switch {
	case len(match) == 0:
		return Device{}, fmt.Errorf("%w: %q (encore gate devices lists them)", ErrNoDevice, idOrName)
	case len(match) > 1:
		return Device{}, fmt.Errorf("gate: %d live devices are named %q: revoke one by its ID", len(match), idOrName)
	}
	d := match[0]
	if d.RevokedAt != nil {
		return d, nil
	}
	if _, err := s.write.ExecContext(ctx, `UPDATE devices SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`,
		now.UnixMilli(), d.ID); err != nil {
		return Device{}, err
	}
	at := now.UTC()
	d.RevokedAt = &at
	return d, nil
}
