// Package session issues and verifies fans' bearer tokens. This is the demo
// login of the public contract (POST /v1/sessions): a token is the user and
// device IDs signed with HMAC; a real identity provider replaces Issue and
// keeps Verify's contract.
package session

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Identity is who calls: an account on a device.
type Identity struct {
	UserID   string `json:"u"`
	DeviceID string `json:"d"`
	IssuedAt int64  `json:"iat"`
}

// TTL is how long a token is accepted.
const TTL = 24 * time.Hour

// ErrInvalid is any token that does not verify.
var ErrInvalid = errors.New("session: invalid token")

// Issuer signs and verifies tokens with one key.
type Issuer struct{ key []byte }

// NewIssuer returns an issuer for key.
func NewIssuer(key string) *Issuer { return &Issuer{key: []byte(key)} }

// Issue returns a token for the identity.
func (i *Issuer) Issue(userID, deviceID string, now time.Time) string {
	body, _ := json.Marshal(Identity{UserID: userID, DeviceID: deviceID, IssuedAt: now.Unix()})
	payload := base64.RawURLEncoding.EncodeToString(body)
	return payload + "." + i.sign(payload)
}

func (i *Issuer) sign(payload string) string {
	m := hmac.New(sha256.New, i.key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Verify checks a token's signature and age.
func (i *Issuer) Verify(token string, now time.Time) (Identity, error) {
	payload, sig, ok := strings.Cut(token, ".")
	if !ok || len(token) > 1024 || !hmac.Equal([]byte(sig), []byte(i.sign(payload))) {
		return Identity{}, ErrInvalid
	}
	body, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return Identity{}, ErrInvalid
	}
	var id Identity
	if err := json.Unmarshal(body, &id); err != nil || id.UserID == "" {
		return Identity{}, ErrInvalid
	}
	if age := now.Sub(time.Unix(id.IssuedAt, 0)); age < -time.Minute || age > TTL {
		return Identity{}, ErrInvalid
	}
	return id, nil
}
