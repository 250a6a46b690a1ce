package venues

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// FieldError names one offending field: a JSON path
// (layout.sections[3].rows[12].seats[7].number) or a CSV place (line 17,
// column seat).
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// ValidationError is a request or file refused as a whole, with every error
// found (the HTTP edge answers it as invalid-request, 422, with errors).
// Nothing was written.
type ValidationError struct {
	Errors []FieldError
}

func (e *ValidationError) Error() string {
	if len(e.Errors) == 0 {
		return "invalid"
	}
	msg := fmt.Sprintf("invalid: %s: %s", e.Errors[0].Field, e.Errors[0].Message)
	if n := len(e.Errors) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more)", n)
	}
	return msg
}

// Invalid is a ValidationError of one field.
func Invalid(field, format string, args ...any) *ValidationError {
	return &ValidationError{Errors: []FieldError{{Field: field, Message: fmt.Sprintf(format, args...)}}}
}

// ErrConflict says the request is well formed but the thing it would change
// cannot change now (a published event's layout, an unblock of a sold seat).
// The HTTP edge answers 409; the wrapping error says why.
var ErrConflict = errors.New("conflict")

// Scope is who acts: an organiser acts on its own organisation's venues and
// events only; an admin on any (Org then names the organisation new venues
// belong to). Actor is recorded in logs such as the seat block log.
type Scope struct {
	Org   string
	Admin bool
	Actor string
}

// Organiser is the scope of an organiser of org.
func Organiser(org, actor string) Scope { return Scope{Org: org, Actor: actor} }

// Admin is the scope of an admin, creating for org (may be empty when only
// reading or changing existing things).
func Admin(org, actor string) Scope { return Scope{Org: org, Admin: true, Actor: actor} }

// DemoOrg is the organisation that owns the demo venues and events, and the
// default of the CLI's --org.
const DemoOrg = "org_encore"

// Filter is the organisation a store query is restricted to: empty only for
// an admin (every organisation).
func (s Scope) Filter() string {
	if s.Admin {
		return ""
	}
	return s.Org
}

// Check refuses a scope that could not act: an organiser without an
// organisation.
func (s Scope) Check() error {
	if !s.Admin && s.Org == "" {
		return Invalid("org", "an organiser acts for an organisation")
	}
	if len(s.Org) > 100 {
		return Invalid("org", "at most 100 characters")
	}
	return nil
}

// LimitError is an import stopped at a cap: the body's size, the layout's
// seats or rows, its sections or categories. The parser stops reading as
// soon as the cap is passed, so a layout of a million seats costs no more
// to refuse than one just past the cap; nothing was written. The HTTP edge
// answers 413 layout-too-large naming Field and Limit.
type LimitError struct {
	// Field is what passed the cap: "body" (or "file"), "layout" (seats
	// or rows), "layout.sections" or "layout.categories".
	Field string
	// Limit is the cap that was passed.
	Limit int
	// Message says so in words.
	Message string
}

func (e *LimitError) Error() string { return "too large: " + e.Field + ": " + e.Message }

// FieldErrors collects a request's field errors in the order found, for a
// service that checks every field before it refuses (Err).
type FieldErrors []FieldError

// Add notes that field is wrong, as the message format says.
func (e *FieldErrors) Add(field, format string, args ...any) {
	*e = append(*e, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// Has reports whether field is wrong already, so that a check of two
// fields together is skipped when one of them alone failed.
func (e FieldErrors) Has(field string) bool {
	return slices.ContainsFunc(e, func(f FieldError) bool { return f.Field == field })
}

// Err is the ValidationError of every field noted, nil when there is none.
func (e FieldErrors) Err() error {
	if len(e) == 0 {
		return nil
	}
	return &ValidationError{Errors: e}
}

// SetWithin sets *dst to *src when src is given and from lo to hi, and
// notes msg for field when src is given out of that range; a nil src
// leaves dst alone (a PATCH that does not change the field).
func SetWithin[T cmp.Ordered](e *FieldErrors, field string, dst, src *T, lo, hi T, msg string) {
	switch {
	case src == nil:
	case *src < lo || *src > hi:
		e.Add(field, "%s", msg)
	default:
		*dst = *src
	}
}
