// Package session is who calls the fan API. A caller's bearer token is a JWT
// from an OpenID Connect issuer; Verifier checks it against the issuer's
// published keys (JWKS) and yields the caller's Identity. Issuer is the
// development issuer behind the demo login (POST /v1/sessions) and its
// authorization code flow with PKCE (authorize.go): it signs with a key
// derived from a secret and is verified by the same Verifier code as any
// other issuer.
package session

import (
	"errors"
	"slices"
	"time"
)

// Role is what a caller may do beyond buying tickets.
type Role string

// The roles a token's "roles" claim may carry. Unknown values are ignored and
// a token with none is a fan's.
const (
	Fan       Role = "fan"
	Organiser Role = "organiser"
	Support   Role = "support"
	Operator  Role = "operator"
	Admin     Role = "admin"
	// Hotelier runs the properties of its organisation ("org"): their room
	// types, nightly inventory and rates, arrivals and walks.
	Hotelier Role = "hotelier"
)

// Roles is every known role.
var Roles = []Role{Fan, Organiser, Support, Operator, Admin, Hotelier}

// ParseRoles keeps the known roles of raw, each once, in the order given; none
// means fan.
func ParseRoles(raw []string) []Role {
	var out []Role
	for _, r := range raw {
		if role := Role(r); slices.Contains(Roles, role) && !slices.Contains(out, role) {
			out = append(out, role)
		}
	}
	if len(out) == 0 {
		out = []Role{Fan}
	}
	return out
}

// Identity is who calls: an account on a device, with what the issuer says
// about it.
type Identity struct {
	// UserID is the token's subject ("sub").
	UserID string
	// DeviceID binds a waiting-room admission to one device: the token's
	// "device_id" claim, else its "sid" (the issuer's login session), else
	// DefaultDevice, which binds admission to the account alone.
	DeviceID string
	// Email is the token's "email" claim when it is a plain address; empty
	// otherwise.
	Email string
	// Roles are the known values of the "roles" claim; never empty.
	Roles []Role
	// Org is the organiser the caller acts for ("org").
	Org string
	// IssuedAt is the token's "iat", zero when absent.
	IssuedAt int64
}

// DefaultDevice is the device of a token that names none.
const DefaultDevice = "default"

// Has reports whether the caller holds role. Everyone signed in is a fan.
func (id Identity) Has(role Role) bool {
	return role == Fan && id.UserID != "" || slices.Contains(id.Roles, role)
}

// CanManage reports whether the caller may manage organiser org's events: an
// admin may manage any, an organiser only their own.
func (id Identity) CanManage(org string) bool {
	if id.Has(Admin) {
		return true
	}
	return org != "" && id.Org == org && id.Has(Organiser)
}

// CanManageProperty reports whether the caller may run a property of
// organisation org: an admin any, a hotelier only their own organisation's.
// A property of no organisation (made before properties had one) is an
// admin's alone.
func (id Identity) CanManageProperty(org string) bool {
	if id.Has(Admin) {
		return true
	}
	return org != "" && id.Org == org && id.Has(Hotelier)
}

// TTL is how long a token of the development issuer is accepted.
const TTL = 24 * time.Hour

// ErrInvalid is any token that does not verify.
var ErrInvalid = errors.New("session: invalid token")
