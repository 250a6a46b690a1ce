// Package controls holds the operator's runtime dials of an event: admission
// capacity and its adaptive bounds, admission and sales paused, the seat
// map's cache TTL and live push. They are stored in PostgreSQL (durable, in
// the admin audit log) and every process follows them through a Watcher,
// which polls only the rows changed since it last looked, so a change is in
// force everywhere within its poll interval (500 ms by default: the
// operator's contract is 2 seconds).
package controls

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Dials are one event's settings. A nil pointer is "the configured default".
type Dials struct {
	EventID           string    `json:"event_id"`
	AdmissionCapacity *int      `json:"admission_capacity"`
	CapacityMin       *int      `json:"admission_capacity_min"`
	CapacityMax       *int      `json:"admission_capacity_max"`
	AdmissionPaused   bool      `json:"admission_paused"`
	SalesPaused       bool      `json:"sales_paused"`
	SeatmapCacheTTLms *int      `json:"seatmap_cache_ttl_ms"`
	LivePush          bool      `json:"live_push"`
	Version           int64     `json:"version"`
	UpdatedAt         time.Time `json:"updated_at,omitzero"`
	UpdatedBy         string    `json:"updated_by,omitempty"`
	// Seq orders changes across events for the watchers; not shown.
	Seq int64 `json:"-"`
}

// Defaults are the dials of an event nobody has touched.
func Defaults(eventID string) Dials { return Dials{EventID: eventID, LivePush: true} }

// Capacity is the admission capacity in force for a base (configured)
// capacity, and the bounds the adaptive controller may move it within.
func (d Dials) Capacity(base, floor, ceiling int) (capacity, lo, hi int) {
	capacity, lo, hi = base, floor, ceiling
	if d.AdmissionCapacity != nil {
		capacity = *d.AdmissionCapacity
		// An operator's capacity outside the configured band moves the band.
		lo, hi = min(lo, capacity), max(hi, capacity)
	}
	if d.CapacityMin != nil {
		lo = *d.CapacityMin
	}
	if d.CapacityMax != nil {
		hi = *d.CapacityMax
	}
	if hi < lo {
		hi = lo
	}
	return capacity, lo, hi
}

// CacheTTL is the seat map's cache TTL for the event, or def.
func (d Dials) CacheTTL(def time.Duration) time.Duration {
	if d.SeatmapCacheTTLms == nil {
		return def
	}
	return time.Duration(*d.SeatmapCacheTTLms) * time.Millisecond
}

// Field is a PATCH member that may be absent, null (back to the default) or
// set.
type Field[T any] struct {
	Set   bool // present in the request
	Null  bool // present as null
	Value T
}

// UnmarshalJSON records presence; json calls it only for present members.
func (f *Field[T]) UnmarshalJSON(b []byte) error {
	f.Set = true
	if string(b) == "null" {
		f.Null = true
		return nil
	}
	return json.Unmarshal(b, &f.Value)
}

// Patch is a PATCH /v1/admin/events/{id}/controls body: only the members
// present change. admission_capacity, its bounds and seatmap_cache_ttl_ms
// accept null (back to the configured default); the switches do not.
type Patch struct {
	AdmissionCapacity Field[int]  `json:"admission_capacity"`
	CapacityMin       Field[int]  `json:"admission_capacity_min"`
	CapacityMax       Field[int]  `json:"admission_capacity_max"`
	AdmissionPaused   Field[bool] `json:"admission_paused"`
	SalesPaused       Field[bool] `json:"sales_paused"`
	SeatmapCacheTTLms Field[int]  `json:"seatmap_cache_ttl_ms"`
	LivePush          Field[bool] `json:"live_push"`
	// Reason is recorded in the admin audit log with the change.
	Reason string `json:"reason"`
}

// Limits of the dials (the table's CHECKs say the same).
const (
	MaxCapacity = 100_000
	MaxCacheTTL = 60_000 // ms
)

// FieldError is one bad member of a patch.
type FieldError struct {
	Field, Message string
}

// ValidationError is a patch refused whole, naming every bad member.
type ValidationError struct {
	Errors []FieldError
}

func (e *ValidationError) Error() string {
	if len(e.Errors) == 0 {
		return "controls: invalid"
	}
	return fmt.Sprintf("controls: %s: %s", e.Errors[0].Field, e.Errors[0].Message)
}

// ErrEmptyPatch is a PATCH that names no dial.
var ErrEmptyPatch = errors.New("controls: the request changes no dial")

// Apply returns d with p applied, or a *ValidationError naming every
// bad member. Nothing is applied when any member is bad.
func (p Patch) Apply(d Dials) (Dials, error) {
	var errs []FieldError
	bad := func(field, msg string) { errs = append(errs, FieldError{Field: field, Message: msg}) }
	setInt := func(dst **int, f Field[int], field string, lo, hi int) {
		if !f.Set {
			return
		}
		if f.Null {
			*dst = nil
			return
		}
		if f.Value < lo || f.Value > hi {
			bad(field, fmt.Sprintf("must be between %d and %d", lo, hi))
			return
		}
		v := f.Value
		*dst = &v
	}
	setBool := func(dst *bool, f Field[bool], field string) {
		if !f.Set {
			return
		}
		if f.Null {
			bad(field, "must be true or false")
			return
		}
		*dst = f.Value
	}
	if !p.AdmissionCapacity.Set && !p.CapacityMin.Set && !p.CapacityMax.Set && !p.AdmissionPaused.Set &&
		!p.SalesPaused.Set && !p.SeatmapCacheTTLms.Set && !p.LivePush.Set {
		return d, ErrEmptyPatch
	}
	setInt(&d.AdmissionCapacity, p.AdmissionCapacity, "admission_capacity", 1, MaxCapacity)
	setInt(&d.CapacityMin, p.CapacityMin, "admission_capacity_min", 1, MaxCapacity)
	setInt(&d.CapacityMax, p.CapacityMax, "admission_capacity_max", 1, MaxCapacity)
	setInt(&d.SeatmapCacheTTLms, p.SeatmapCacheTTLms, "seatmap_cache_ttl_ms", 0, MaxCacheTTL)
	setBool(&d.AdmissionPaused, p.AdmissionPaused, "admission_paused")
	setBool(&d.SalesPaused, p.SalesPaused, "sales_paused")
	setBool(&d.LivePush, p.LivePush, "live_push")
	if len(errs) == 0 && d.CapacityMin != nil && d.CapacityMax != nil && *d.CapacityMin > *d.CapacityMax {
		bad("admission_capacity_min", "must not be above admission_capacity_max")
	}
	if len(errs) == 0 && d.AdmissionCapacity != nil {
		if d.CapacityMin != nil && *d.AdmissionCapacity < *d.CapacityMin {
			bad("admission_capacity", "must not be below admission_capacity_min")
		}
		if d.CapacityMax != nil && *d.AdmissionCapacity > *d.CapacityMax {
			bad("admission_capacity", "must not be above admission_capacity_max")
		}
	}
	if len(errs) > 0 {
		return Dials{}, &ValidationError{Errors: errs}
	}
	return d, nil
}
