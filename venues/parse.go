package venues

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // venues name IANA zones; a host without a zone database still validates them

	"github.com/encore-tickets/encore/vocab"
)

// MaxFileBytes bounds a layout file or body: 100,000 seats in JSON take about
// 5 MB.
const MaxFileBytes = 32 << 20

// Venue is a venue to import: where it is and its layout. It is the body of
// POST /v1/admin/venues and the JSON file of encore venue import.
type Venue struct {
	Name     string `json:"name"`
	City     string `json:"city"`
	Timezone string `json:"timezone"`
	Layout   Layout `json:"layout"`
}

// Validate checks the venue's fields and its whole layout.
func (v *Venue) Validate() error {
	var e errs
	v.validate(&e)
	return e.err()
}

func (v *Venue) validate(e *errs) {
	for _, f := range []struct{ name, value string }{{"name", v.Name}, {"city", v.City}} {
		switch {
		case e.has(f.name):
		case strings.TrimSpace(f.value) == "":
			e.add(f.name, "required")
		case len(f.value) > 200:
			e.add(f.name, "at most 200 characters")
		}
	}
	if !e.has("timezone") {
		if v.Timezone == "" {
			e.add("timezone", "required: an IANA time zone such as Europe/Amsterdam")
		} else if _, err := time.LoadLocation(v.Timezone); err != nil || v.Timezone == "Local" {
			e.add("timezone", "unknown time zone %q", v.Timezone)
		}
	}
	v.Layout.validate(e)
}

// raw keeps a JSON value as sent, so a value of the wrong type is one error
// named by its path rather than the end of decoding.
type raw []byte

func (r *raw) UnmarshalJSON(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}

func (r raw) missing() bool { return len(r) == 0 || string(r) == "null" }

func (r raw) str(e *errs, field string) string {
	if r.missing() {
		return ""
	}
	var s string
	if json.Unmarshal(r, &s) != nil {
		e.add(field, "must be a string")
	}
	return s
}

func (r raw) integer(e *errs, field, want string) int {
	if r.missing() {
		return 0
	}
	n, err := strconv.Atoi(string(r))
	if err != nil {
		e.add(field, "must be %s, not %s", want, abbreviate(string(r)))
	}
	return n
}

func (r raw) number(e *errs, field string) float64 {
	if r.missing() {
		e.add(field, "required: a number")
		return 0
	}
	f, err := strconv.ParseFloat(string(r), 64)
	if err != nil || r[0] == '"' {
		e.add(field, "must be a number, not %s", abbreviate(string(r)))
	}
	return f
}

func abbreviate(s string) string {
	if len(s) > 20 {
		return s[:20] + "..."
	}
	return s
}

type wireVenue struct {
	Name, City, Timezone raw
	Layout               *wireLayout `json:"layout"`
}

type wireLayout struct {
	Categories []raw         `json:"categories"`
	Sections   []wireSection `json:"sections"`
}

type wireSection struct {
	ID, Name, Kind, Category, Capacity raw
	Rows                               []wireRow `json:"rows"`
}

type wireRow struct {
	Label raw
	Seats []wireSeat `json:"seats"`
}

type wireSeat struct{ Number, X, Y raw }

// ParseJSON reads a venue (name, city, timezone and layout) and validates it
// whole: the error is a *ValidationError naming every problem by its JSON
// path.
func ParseJSON(r io.Reader) (Venue, error) {
	body, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return Venue{}, err
	}
	if len(body) > MaxFileBytes {
		return Venue{}, Invalid("body", "larger than %d bytes", MaxFileBytes)
	}
	var w wireVenue
	var e errs
	if err := json.Unmarshal(body, &w); err != nil {
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			return Venue{}, Invalid("body", "not valid JSON: %v", err)
		}
		// Decoding went on past it: report it with the rest.
		e.add(te.Field, "must be a JSON %s, not %s", kindOf(te.Type.Kind().String()), te.Value)
	}
	v := Venue{Name: w.Name.str(&e, "name"), City: w.City.str(&e, "city"), Timezone: w.Timezone.str(&e, "timezone")}
	if w.Layout == nil {
		e.add("layout", "required")
		v.validate(&e)
		return v, e.err()
	}
	for i, c := range w.Layout.Categories {
		v.Layout.Categories = append(v.Layout.Categories, c.str(&e, fmt.Sprintf("layout.categories[%d]", i)))
	}
	v.Layout.Sections = make([]Section, len(w.Layout.Sections))
	for si, ws := range w.Layout.Sections {
		p := fmt.Sprintf("layout.sections[%d].", si)
		s := &v.Layout.Sections[si]
		s.ID, s.Name = ws.ID.str(&e, p+"id"), ws.Name.str(&e, p+"name")
		s.Kind, s.Category = vocab.SectionKind(ws.Kind.str(&e, p+"kind")), ws.Category.str(&e, p+"category")
		s.Capacity = ws.Capacity.integer(&e, p+"capacity", "a whole number")
		if s.Name == "" {
			s.Name = s.ID
		}
		s.Rows = make([]Row, len(ws.Rows))
		for ri, wr := range ws.Rows {
			rp := fmt.Sprintf("%srows[%d].", p, ri)
			row := &s.Rows[ri]
			row.Label = wr.Label.str(&e, rp+"label")
			row.Seats = make([]Seat, len(wr.Seats))
			for ki, wk := range wr.Seats {
				seat := &row.Seats[ki]
				if wk.Number.missing() {
					seat.Number = 0 // validate says it is missing
				} else {
					seat.Number = wk.Number.integer(&e, fmt.Sprintf("%sseats[%d].number", rp, ki), "a whole number")
				}
				seat.X = wk.X.number(&e, fmt.Sprintf("%sseats[%d].x", rp, ki))
				seat.Y = wk.Y.number(&e, fmt.Sprintf("%sseats[%d].y", rp, ki))
			}
		}
	}
	v.validate(&e)
	return v, e.err()
}

func kindOf(k string) string {
	switch k {
	case "slice":
		return "array"
	case "struct", "ptr":
		return "object"
	}
	return k
}

// CSVMeta is what a CSV layout cannot say: the venue's name, city and time
// zone, and optionally the closed set of categories.
type CSVMeta struct {
	Name, City, Timezone string
	Categories           []string
}

// CSV columns. A header line names them in any order; capacity and name are
// optional.
var (
	csvRequired = []string{"section", "kind", "category", "row", "seat", "x", "y"}
	csvOptional = []string{"capacity", "name"}
)

// ParseCSV reads a layout with one line per seat (section, kind, category,
// row, seat, x, y; optional name and capacity) and one line per
// general-admission section (row, seat, x and y empty, capacity set). Lines
// of a section agree on its kind, category and name; rows and sections keep
// the order of their first line. The error is a *ValidationError naming every
// problem by line and column.
func ParseCSV(r io.Reader, meta CSVMeta) (Venue, error) {
	body, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return Venue{}, err
	}
	if len(body) > MaxFileBytes {
		return Venue{}, Invalid("file", "larger than %d bytes", MaxFileBytes)
	}
	cr := csv.NewReader(bytes.NewReader(body))
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	v := Venue{Name: meta.Name, City: meta.City, Timezone: meta.Timezone, Layout: Layout{Categories: meta.Categories}}
	var e errs
	header, err := cr.Read()
	if err != nil {
		return Venue{}, Invalid("line 1", "a header line naming the columns %s is required", strings.Join(csvRequired, ","))
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.ToLower(strings.TrimSpace(h))] = i
	}
	for _, c := range csvRequired {
		if _, ok := col[c]; !ok {
			e.add("line 1, column "+c, "missing column %q (the header names %s)", c, strings.Join(csvRequired, ","))
		}
	}
	if len(e.list) > 0 {
		return Venue{}, e.err()
	}
	sections := map[string]int{} // section id -> index
	rows := map[[2]string]int{}  // section id, row label -> index
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			e.add(fmt.Sprintf("line %d, column %d", pe.Line, pe.Column), "%v", pe.Err)
			if len(e.list) >= maxErrors {
				break
			}
			continue
		}
		if err != nil {
			return Venue{}, err
		}
		line, _ := cr.FieldPos(0)
		get := func(name string) string {
			i, ok := col[name]
			if !ok || i >= len(rec) {
				return ""
			}
			return strings.TrimSpace(rec[i])
		}
		at := func(c string) string { return fmt.Sprintf("line %d, column %s", line, c) }
		id, kind, category := get("section"), vocab.SectionKind(get("kind")), get("category")
		si, ok := sections[id]
		if !ok {
			si = len(v.Layout.Sections)
			sections[id] = si
			name := get("name")
			if name == "" {
				name = id
			}
			v.Layout.Sections = append(v.Layout.Sections, Section{ID: id, Name: name, Kind: kind, Category: category, line: line})
		}
		s := &v.Layout.Sections[si]
		switch {
		case kind != s.Kind:
			e.add(at("kind"), "section %q is %q on line %d", id, s.Kind, s.line)
		case category != s.Category:
			e.add(at("category"), "section %q has category %q on line %d", id, s.Category, s.line)
		}
		if c := get("capacity"); c != "" {
			n, err := strconv.Atoi(c)
			if err != nil {
				e.add(at("capacity"), "must be a whole number, not %q", abbreviate(c))
			} else if s.Capacity != 0 && s.Capacity != n {
				e.add(at("capacity"), "section %q has capacity %d on line %d", id, s.Capacity, s.line)
			} else {
				s.Capacity = n
			}
		}
		if get("row") == "" && get("seat") == "" {
			continue // a general-admission area's own line
		}
		label := get("row")
		ri, ok := rows[[2]string{id, label}]
		if !ok {
			ri = len(s.Rows)
			rows[[2]string{id, label}] = ri
			s.Rows = append(s.Rows, Row{Label: label, line: line})
		}
		seat := Seat{line: line}
		if t := get("seat"); t == "" {
			e.add(at("seat"), "missing seat number")
		} else if seat.Number, err = strconv.Atoi(t); err != nil {
			e.add(at("seat"), "must be a whole number, not %q", abbreviate(t))
		}
		for _, c := range []struct {
			name string
			dst  *float64
		}{{"x", &seat.X}, {"y", &seat.Y}} {
			t := get(c.name)
			f, err := strconv.ParseFloat(t, 64)
			if err != nil {
				e.add(at(c.name), "must be a number, not %q", abbreviate(t))
			}
			*c.dst = f
		}
		s.Rows[ri].Seats = append(s.Rows[ri].Seats, seat)
	}
	v.validate(&e)
	return v, e.err()
}
