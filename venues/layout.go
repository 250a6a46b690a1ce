// Package venues holds organisers' venues and their layouts: sections of rows
// of seats with their place on the plan (x, y) and their price category, plus
// general-admission areas counted by capacity. A layout arrives as JSON (the
// body of POST /v1/admin/venues, or a file) or CSV (a file); both parse into
// one Layout, which is validated as a whole, every error named by its JSON
// path or CSV line, before a single row is written. The import is one
// transaction that streams the seats with COPY.
package venues

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/encore-tickets/encore/vocab"
)

// MaxSeats bounds a layout's numbered seats (and a general area's capacity).
const MaxSeats = 100_000

// maxErrors bounds the errors one answer lists: a file with a systematic
// mistake on every line says so in the first thousand.
const maxErrors = 1000

// Layout is a venue's plan. Categories, when given, is the closed set of
// price categories its sections may use; empty, any well-formed category is
// accepted.
type Layout struct {
	Categories []string  `json:"categories,omitempty"`
	Sections   []Section `json:"sections"`
}

// Section is a seated block of rows or a general-admission area. Capacity is
// required for a general area; for a seated section it may be omitted and,
// when given, must equal the number of seats.
type Section struct {
	ID       string            `json:"id"`
	Name     string            `json:"name"`
	Kind     vocab.SectionKind `json:"kind"`
	Category string            `json:"category"`
	Capacity int               `json:"capacity,omitempty"`
	Rows     []Row             `json:"rows,omitempty"`

	line int // CSV line that introduced it; 0 for JSON
}

// Row is a labelled row of seats.
type Row struct {
	Label string `json:"label"`
	Seats []Seat `json:"seats"`

	line int
}

// Seat is a numbered seat at (X, Y) on the venue's plan (any unit; a client
// scales the plan to its canvas).
type Seat struct {
	Number int     `json:"number"`
	X      float64 `json:"x"`
	Y      float64 `json:"y"`

	line int
}

// Seats counts the layout's numbered seats.
func (l *Layout) Seats() int {
	n := 0
	for _, s := range l.Sections {
		for _, r := range s.Rows {
			n += len(r.Seats)
		}
	}
	return n
}

// CategoryNames lists the categories the sections use, in first-use order.
func (l *Layout) CategoryNames() []string {
	var out []string
	for _, s := range l.Sections {
		if !slices.Contains(out, s.Category) {
			out = append(out, s.Category)
		}
	}
	return out
}

var (
	idPattern       = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,39}$`)
	categoryPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,39}$`)
	// Row labels become part of seat IDs: letters, digits, dot and underscore.
	rowPattern = regexp.MustCompile(`^[A-Za-z0-9_.]{1,16}$`)
)

// maxSeatNumber bounds a seat number.
const maxSeatNumber = 99_999

// errs collects field errors, one per field (the first found), bounded.
type errs struct {
	list    []FieldError
	seen    map[string]bool
	dropped int
}

func (e *errs) add(field, format string, args ...any) {
	if e.seen == nil {
		e.seen = map[string]bool{}
	}
	if e.seen[field] {
		return
	}
	e.seen[field] = true
	if len(e.list) >= maxErrors {
		e.dropped++
		return
	}
	e.list = append(e.list, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

func (e *errs) has(field string) bool { return e.seen[field] }

func (e *errs) err() error {
	if len(e.list) == 0 {
		return nil
	}
	out := &ValidationError{Errors: e.list}
	if e.dropped > 0 {
		out.Errors = append(out.Errors, FieldError{Field: "layout", Message: fmt.Sprintf("%d more errors not listed", e.dropped)})
	}
	return out
}

// csvColumn names the CSV column of a layout field.
var csvColumn = map[string]string{
	"id": "section", "name": "name", "kind": "kind", "category": "category", "capacity": "capacity",
	"label": "row", "number": "seat", "x": "x", "y": "y", "rows": "row", "seats": "seat",
}

// where names a field of a layout element: by line and column for CSV, by
// JSON path otherwise.
func where(line int, path func() string, field string) string {
	if line > 0 {
		return fmt.Sprintf("line %d, column %s", line, csvColumn[field])
	}
	return path() + "." + field
}

// Validate checks the whole layout and returns a *ValidationError listing
// every problem (up to a thousand), or nil.
func (l *Layout) Validate() error {
	var e errs
	l.validate(&e)
	return e.err()
}

func (l *Layout) validate(e *errs) {
	if len(l.Sections) == 0 {
		e.add("layout.sections", "a layout needs at least one section")
		return
	}
	declared := map[string]bool{}
	for i, c := range l.Categories {
		if !categoryPattern.MatchString(c) {
			e.add(fmt.Sprintf("layout.categories[%d]", i), "a category is 1-40 lower-case letters, digits, - or _")
		}
		declared[c] = true
	}
	sectionAt := map[string]string{}
	total := 0
	for si := range l.Sections {
		s := &l.Sections[si]
		spath := func() string { return fmt.Sprintf("layout.sections[%d]", si) }
		at := func(field string) string { return where(s.line, spath, field) }
		switch {
		case s.ID == "":
			e.add(at("id"), "missing section id")
		case !idPattern.MatchString(s.ID):
			e.add(at("id"), "a section id is 1-40 lower-case letters, digits, - or _, starting with a letter or digit")
		case sectionAt[s.ID] != "":
			e.add(at("id"), "duplicate section id %q (first at %s)", s.ID, sectionAt[s.ID])
		default:
			sectionAt[s.ID] = strings.TrimSuffix(at("id"), ".id")
		}
		if len(s.Name) > 200 {
			e.add(at("name"), "at most 200 characters")
		}
		switch {
		case s.Category == "":
			e.add(at("category"), "missing category")
		case !categoryPattern.MatchString(s.Category):
			e.add(at("category"), "a category is 1-40 lower-case letters, digits, - or _")
		case len(l.Categories) > 0 && !declared[s.Category]:
			e.add(at("category"), "unknown category %q (the layout declares %s)", s.Category, strings.Join(l.Categories, ", "))
		}
		switch s.Kind {
		case vocab.SectionGeneral:
			if s.Capacity <= 0 && !e.has(at("capacity")) {
				e.add(at("capacity"), "a general-admission section needs a capacity above 0")
			} else if s.Capacity > MaxSeats {
				e.add(at("capacity"), "at most %d", MaxSeats)
			}
			if len(s.Rows) > 0 {
				e.add(at("rows"), "a general-admission section has no rows")
			}
		case vocab.SectionSeated:
			n := l.validateRows(e, si, spath)
			total += n
			if s.Capacity != 0 && s.Capacity != n && !e.has(at("capacity")) {
				e.add(at("capacity"), "capacity %d does not match the section's %d seats", s.Capacity, n)
			}
		case "":
			if !e.has(at("kind")) {
				e.add(at("kind"), "missing kind: seated or general")
			}
		default:
			e.add(at("kind"), "kind %q is neither seated nor general", s.Kind)
		}
	}
	if total > MaxSeats {
		e.add("layout", "%d seats: a layout has at most %d", total, MaxSeats)
	}
}

// validateRows checks a seated section's rows and returns its seat count.
func (l *Layout) validateRows(e *errs, si int, spath func() string) int {
	s := &l.Sections[si]
	if len(s.Rows) == 0 {
		e.add(where(s.line, spath, "rows"), "a seated section needs at least one row")
		return 0
	}
	n := 0
	rowAt := map[string]string{}
	for ri := range s.Rows {
		r := &s.Rows[ri]
		rpath := func() string { return fmt.Sprintf("%s.rows[%d]", spath(), ri) }
		at := where(r.line, rpath, "label")
		switch {
		case r.Label == "":
			e.add(at, "missing row label")
		case !rowPattern.MatchString(r.Label):
			e.add(at, "a row label is 1-16 letters, digits, . or _")
		case rowAt[r.Label] != "":
			e.add(at, "duplicate row %q in section %q (first at %s)", r.Label, s.ID, rowAt[r.Label])
		default:
			rowAt[r.Label] = at
		}
		if len(r.Seats) == 0 {
			e.add(where(r.line, rpath, "seats"), "a row needs at least one seat")
		}
		numberAt := make(map[int]string, len(r.Seats))
		for ki := range r.Seats {
			seat := &r.Seats[ki]
			kpath := func() string { return fmt.Sprintf("%s.seats[%d]", rpath(), ki) }
			at := where(seat.line, kpath, "number")
			switch {
			case e.has(at):
			case seat.Number < 1 || seat.Number > maxSeatNumber:
				e.add(at, "a seat number is a whole number from 1 to %d", maxSeatNumber)
			case numberAt[seat.Number] != "":
				e.add(at, "duplicate seat %d in row %q of section %q (first at %s)", seat.Number, r.Label, s.ID, numberAt[seat.Number])
			default:
				numberAt[seat.Number] = at
			}
			for _, c := range []struct {
				name string
				v    float64
			}{{"x", seat.X}, {"y", seat.Y}} {
				if math.IsNaN(c.v) || math.IsInf(c.v, 0) || math.Abs(c.v) > 1e9 {
					e.add(where(seat.line, kpath, c.name), "a coordinate is a finite number")
				}
			}
		}
		n += len(r.Seats)
	}
	return n
}
