package venues

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
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
	// Lat and Lng place the venue (WGS 84 degrees), both or neither: fans
	// are offered the hotels nearest it.
	Lat    *float64 `json:"lat,omitempty"`
	Lng    *float64 `json:"lng,omitempty"`
	Layout Layout   `json:"layout"`
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
	checkCoordinates(e, v.Lat, v.Lng)
	v.Layout.validate(e)
}

// checkCoordinates refuses half a place or one off the globe.
func checkCoordinates(e *errs, lat, lng *float64) {
	switch {
	case e.has("lat") || e.has("lng"):
	case (lat == nil) != (lng == nil):
		e.add("lat", "lat and lng go together: give both or neither")
	case lat != nil && (*lat < -90 || *lat > 90 || math.IsNaN(*lat)):
		e.add("lat", "degrees north, -90 to 90")
	case lng != nil && (*lng < -180 || *lng > 180 || math.IsNaN(*lng)):
		e.add("lng", "degrees east, -180 to 180")
	}
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

// wireSeat is one seat as sent, decoded whole: a seat is small, and every
// member is kept raw so a wrong type is an error named by its path.
type wireSeat struct{ Number, X, Y raw }

// Caps a layout stops at while it is read (MaxSeats bounds seats and, since
// a row needs a seat, rows): each is far past any real venue, and each
// stops a body that would otherwise be read whole before validation.
const (
	// MaxSections bounds a layout's sections; the example arena has 22.
	MaxSections = 2_000
	// maxCategories bounds the declared categories (a category is used
	// by at least one section).
	maxCategories = MaxSections
)

// capReader reads at most max bytes of r and fails with a *LimitError
// naming field on the first byte past them: the import stops there rather
// than read (or buffer) the rest.
type capReader struct {
	r     io.Reader
	left  int64
	max   int64
	field string
}

func newCapReader(r io.Reader, max int64, field string) *capReader {
	return &capReader{r: r, left: max, max: max, field: field}
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// At the cap: one more byte means the body passed it.
		var one [1]byte
		n, err := c.r.Read(one[:])
		if n > 0 {
			return 0, &LimitError{Field: c.field, Limit: int(c.max), Message: fmt.Sprintf("larger than %d bytes", c.max)}
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// jsonParser walks a venue's JSON token by token, so it holds one seat at
// a time beyond the layout it has built, and counts as it goes: it stops at
// the first seat, row, section or category past its cap (a *LimitError)
// instead of reading the rest of the body.
type jsonParser struct {
	dec   *json.Decoder
	e     errs
	seats int
	rows  int
}

// ParseJSON reads a venue (name, city, timezone and layout) as a stream and
// validates it whole: the error is a *ValidationError naming every problem
// by its JSON path, or a *LimitError as soon as the body passes
// MaxFileBytes or the layout passes MaxSeats seats (or rows), MaxSections
// sections or as many categories; nothing after that point is read.
// Members are matched case-insensitively and unknown ones skipped, as
// encoding/json does.
func ParseJSON(r io.Reader) (Venue, error) {
	p := &jsonParser{dec: json.NewDecoder(newCapReader(r, MaxFileBytes, "body"))}
	v, err := p.venue()
	if err != nil {
		var le *LimitError
		if errors.As(err, &le) {
			return Venue{}, le
		}
		var se *json.SyntaxError
		if errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, errNotJSON) {
			return Venue{}, Invalid("body", "not valid JSON: %v", err)
		}
		return Venue{}, err // the reader's own failure
	}
	if _, err := p.dec.Token(); err != io.EOF {
		var le *LimitError
		if errors.As(err, &le) {
			return Venue{}, le
		}
		return Venue{}, Invalid("body", "not valid JSON: more after the venue's object")
	}
	v.validate(&p.e)
	return v, p.e.err()
}

// errNotJSON: a token where JSON allows none (a stray delimiter).
var errNotJSON = errors.New("unexpected token")

func (p *jsonParser) venue() (Venue, error) {
	var v Venue
	var name, city, timezone, lat, lng raw
	layout := false
	scalars := map[string]*raw{"name": &name, "city": &city, "timezone": &timezone, "lat": &lat, "lng": &lng}
	err := p.objectWith("", scalars, func(key string) error {
		if strings.EqualFold(key, "layout") {
			l, present, err := p.layout()
			v.Layout, layout = l, present
			return err
		}
		return p.skip()
	})
	if err != nil {
		return Venue{}, err
	}
	v.Name, v.City, v.Timezone = name.str(&p.e, "name"), city.str(&p.e, "city"), timezone.str(&p.e, "timezone")
	for _, c := range []struct {
		r   raw
		to  **float64
		key string
	}{{lat, &v.Lat, "lat"}, {lng, &v.Lng, "lng"}} {
		if !c.r.missing() {
			f := c.r.number(&p.e, c.key)
			*c.to = &f
		}
	}
	if !layout {
		p.e.add("layout", "required")
	}
	return v, nil
}

// layout reads the layout object; present is false for null or a value of
// the wrong type (reported).
func (p *jsonParser) layout() (Layout, bool, error) {
	var l Layout
	present := false
	err := p.objectOrNull("layout", &present, func(key string) error {
		switch {
		case strings.EqualFold(key, "categories"):
			l.Categories = nil
			return p.array("layout.categories", func(i int) error {
				if i >= maxCategories {
					return &LimitError{Field: "layout.categories", Limit: maxCategories,
						Message: fmt.Sprintf("more than %d categories", maxCategories)}
				}
				var c raw
				if err := p.dec.Decode(&c); err != nil {
					return err
				}
				l.Categories = append(l.Categories, c.str(&p.e, fmt.Sprintf("layout.categories[%d]", i)))
				return nil
			})
		case strings.EqualFold(key, "sections"):
			l.Sections = nil
			return p.array("layout.sections", func(i int) error {
				if i >= MaxSections {
					return &LimitError{Field: "layout.sections", Limit: MaxSections,
						Message: fmt.Sprintf("more than %d sections: a layout has at most %d", MaxSections, MaxSections)}
				}
				s, err := p.section(fmt.Sprintf("layout.sections[%d]", i))
				l.Sections = append(l.Sections, s)
				return err
			})
		}
		return p.skip()
	})
	return l, present, err
}

func (p *jsonParser) section(path string) (Section, error) {
	var s Section
	var id, name, kind, category, capacity raw
	scalars := map[string]*raw{"id": &id, "name": &name, "kind": &kind, "category": &category, "capacity": &capacity}
	err := p.objectWith(path, scalars, func(key string) error {
		if strings.EqualFold(key, "rows") {
			s.Rows = nil
			return p.array(path+".rows", func(i int) error {
				if p.rows++; p.rows > MaxSeats {
					return &LimitError{Field: "layout", Limit: MaxSeats,
						Message: fmt.Sprintf("more than %d rows: a layout has at most %d seats, each row at least one", MaxSeats, MaxSeats)}
				}
				r, err := p.row(fmt.Sprintf("%s.rows[%d]", path, i))
				s.Rows = append(s.Rows, r)
				return err
			})
		}
		return p.skip()
	})
	p2 := path + "."
	s.ID, s.Name = id.str(&p.e, p2+"id"), name.str(&p.e, p2+"name")
	s.Kind, s.Category = vocab.SectionKind(kind.str(&p.e, p2+"kind")), category.str(&p.e, p2+"category")
	s.Capacity = capacity.integer(&p.e, p2+"capacity", "a whole number")
	if s.Name == "" {
		s.Name = s.ID
	}
	return s, err
}

func (p *jsonParser) row(path string) (Row, error) {
	var r Row
	var label raw
	err := p.objectWith(path, map[string]*raw{"label": &label}, func(key string) error {
		if strings.EqualFold(key, "seats") {
			r.Seats = nil
			return p.array(path+".seats", func(i int) error {
				if p.seats++; p.seats > MaxSeats {
					return &LimitError{Field: "layout", Limit: MaxSeats,
						Message: fmt.Sprintf("more than %d seats: a layout has at most %d", MaxSeats, MaxSeats)}
				}
				kp := fmt.Sprintf("%s.seats[%d]", path, i)
				var w wireSeat
				var seat Seat
				if err := p.dec.Decode(&w); err != nil {
					var te *json.UnmarshalTypeError
					if !errors.As(err, &te) {
						return err
					}
					// The value was read whole: report it and go on.
					p.e.add(kp, "must be a JSON object, not %s", te.Value)
					r.Seats = append(r.Seats, seat)
					return nil
				}
				if !w.Number.missing() {
					seat.Number = w.Number.integer(&p.e, kp+".number", "a whole number")
				} // else validate says it is missing
				seat.X = w.X.number(&p.e, kp+".x")
				seat.Y = w.Y.number(&p.e, kp+".y")
				r.Seats = append(r.Seats, seat)
				return nil
			})
		}
		return p.skip()
	})
	r.Label = label.str(&p.e, path+".label")
	return r, err
}

// object reads an object at path, calling member for each key with the
// decoder at the key's value, which member must read. A value of another
// type is reported (must be a JSON object) and skipped.
func (p *jsonParser) object(path string, member func(key string) error) error {
	present := false
	return p.objectOrNull(path, &present, member)
}

// objectWith is object whose scalar members are read into scalars (their
// names matched without regard to case, as encoding/json matches them);
// member gets every other key.
func (p *jsonParser) objectWith(path string, scalars map[string]*raw, member func(key string) error) error {
	return p.object(path, func(key string) error {
		for name, dst := range scalars {
			if strings.EqualFold(key, name) {
				return p.dec.Decode(dst)
			}
		}
		return member(key)
	})
}

// objectOrNull is object that also accepts null; present says whether an
// object was there.
func (p *jsonParser) objectOrNull(path string, present *bool, member func(key string) error) error {
	ok, err := p.open('{', path, "object")
	if !ok || err != nil {
		return err
	}
	*present = true
	for p.dec.More() {
		t, err := p.dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		if err := member(key); err != nil {
			return err
		}
	}
	_, err = p.dec.Token() // '}'
	return err
}

// array reads an array at path, calling elem for each index with the
// decoder at the element, which elem must read. A value of another type is
// reported (must be a JSON array) and skipped; null is an empty array.
func (p *jsonParser) array(path string, elem func(i int) error) error {
	ok, err := p.open('[', path, "array")
	if !ok || err != nil {
		return err
	}
	for i := 0; p.dec.More(); i++ {
		if err := elem(i); err != nil {
			return err
		}
	}
	_, err = p.dec.Token() // ']'
	return err
}

// open reads the first token of a value that should open with want. ok is
// false when it did not: null is let pass; any other value is reported at
// path and skipped whole.
func (p *jsonParser) open(want json.Delim, path, kind string) (ok bool, err error) {
	t, err := p.dec.Token()
	if err != nil {
		return false, err
	}
	if d, isDelim := t.(json.Delim); isDelim && d == want {
		return true, nil
	}
	if t == nil {
		return false, nil
	}
	field := path
	if field == "" {
		return false, fmt.Errorf("%w: the venue must be a JSON object", errNotJSON)
	}
	p.e.add(field, "must be a JSON %s, not %s", kind, tokenKind(t))
	if d, isDelim := t.(json.Delim); isDelim && (d == '{' || d == '[') {
		return false, p.skipRest()
	}
	return false, nil
}

func tokenKind(t json.Token) string {
	switch v := t.(type) {
	case json.Delim:
		if v == '{' {
			return "object"
		}
		return "array"
	case string:
		return "string"
	case float64, json.Number:
		return "number"
	case bool:
		return "bool"
	}
	return "null"
}

// skip reads one value whole, token by token, holding none of it.
func (p *jsonParser) skip() error {
	t, err := p.dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); ok && (d == '{' || d == '[') {
		return p.skipRest()
	}
	return nil
}

// skipRest reads to the end of the object or array just opened.
func (p *jsonParser) skipRest() error {
	for depth := 1; depth > 0; {
		t, err := p.dec.Token()
		if err != nil {
			return err
		}
		if d, ok := t.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

// CSVMeta is what a CSV layout cannot say: the venue's name, city and time
// zone, and optionally the closed set of categories.
type CSVMeta struct {
	Name, City, Timezone string
	Categories           []string
	// Lat and Lng place the venue (both or neither).
	Lat, Lng *float64
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
	// Read line by line: the import stops at the first byte past
	// MaxFileBytes, the first seat past MaxSeats or the first section past
	// MaxSections, without reading the rest.
	cr := csv.NewReader(newCapReader(r, MaxFileBytes, "file"))
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	v := Venue{Name: meta.Name, City: meta.City, Timezone: meta.Timezone, Lat: meta.Lat, Lng: meta.Lng, Layout: Layout{Categories: meta.Categories}}
	var e errs
	header, err := cr.Read()
	var le *LimitError
	if errors.As(err, &le) {
		return Venue{}, le
	}
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
	seats := 0
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if errors.As(err, &le) {
			return Venue{}, le
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
			if len(v.Layout.Sections) >= MaxSections {
				return Venue{}, &LimitError{Field: "layout.sections", Limit: MaxSections,
					Message: fmt.Sprintf("line %d: more than %d sections: a layout has at most %d", line, MaxSections, MaxSections)}
			}
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
		if seats++; seats > MaxSeats {
			return Venue{}, &LimitError{Field: "layout", Limit: MaxSeats,
				Message: fmt.Sprintf("line %d: more than %d seats: a layout has at most %d", line, MaxSeats, MaxSeats)}
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
