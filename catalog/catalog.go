// Package catalog is the browse plane's event search: full-text search with
// filters and cursor pagination, autocomplete, and the event page with its
// sections. It reads through store.Reader (a read-only role on its own small
// pool) and never touches the buy plane's pool.
package catalog

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/encore-tickets/encore/internal/bulkhead"
	"github.com/encore-tickets/encore/internal/lru"
	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/store"
)

// ErrBadCursor says a cursor is malformed or belongs to another query.
var ErrBadCursor = errors.New("catalog: cursor is not valid for this query")

// Event is an event as search lists it (the public contract's field names).
type Event struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Artist string `json:"artist"`
	Venue  string `json:"venue"`
	City   string `json:"city"`
	// Timezone is the venue's IANA zone ("Europe/Amsterdam"): the fan's
	// pages show the event's times in it, labelled.
	Timezone string    `json:"timezone"`
	Genre    string    `json:"genre"`
	StartsAt time.Time `json:"starts_at"`
	OnsaleAt time.Time `json:"onsale_at"`
	Currency string    `json:"currency"`
	Metered  bool      `json:"metered"`
}

// Page is one page of search results; NextCursor is null on the last page.
type Page struct {
	Events     []Event `json:"events"`
	NextCursor *string `json:"next_cursor"`
}

// Query is a search request.
type Query struct {
	Text  string
	City  string
	Genre string
	From  *time.Time
	To    *time.Time
	// Series lists the dates of one series (its events by date).
	Series string
	Cursor string
	Limit  int
}

// Suggestion is one autocomplete answer.
type Suggestion struct {
	Text    string `json:"text"`
	EventID string `json:"event_id"`
}

// Section is a section of the event page.
type Section struct {
	ID        string      `json:"id"`
	Name      string      `json:"name"`
	Kind      string      `json:"kind"`
	Capacity  int         `json:"capacity"`
	Available int         `json:"available"`
	BasePrice money.Money `json:"base_price"`
	Category  string      `json:"category"`
}

// EventDetail is the event page.
type EventDetail struct {
	Event
	Description string    `json:"description"`
	Sections    []Section `json:"sections"`
	// TicketTypes are what a hold may name per seat (the first applies when
	// none is named), each with its price per seat category; ServiceFee is
	// charged per ticket on top, shown apart.
	TicketTypes []TicketType `json:"ticket_types"`
	ServiceFee  money.Money  `json:"service_fee"`
	SeriesID    string       `json:"series_id,omitempty"`
}

// TicketType is one ticket type of an event as fans see it.
type TicketType struct {
	ID          string                 `json:"id"`
	Name        string                 `json:"name"`
	Prices      map[string]money.Money `json:"prices"`
	MaxPerOrder int                    `json:"max_per_order,omitempty"`
	Requires    string                 `json:"requires,omitempty"`
}

// Service answers browse queries.
type Service struct {
	reader *store.Reader
	// DetailTTL is how long an event page is reused in this process (1s);
	// its availability counts are advisory anyway.
	DetailTTL time.Duration
	// SuggestTTL is how long a list of suggestions is reused in this
	// process, keyed by its normalised prefix (DefaultSuggestTTL; 0: none).
	SuggestTTL time.Duration

	group    singleflight.Group
	mu       sync.Mutex
	details  map[string]cachedDetail
	sections *lru.Cache[string, sectionSet]
	suggests *lru.Cache[string, []Suggestion]

	// gates bound each class's reads of the pool (Guard); nil: unbounded.
	gates map[Class]*bulkhead.Bulkhead
}

// DefaultSuggestTTL is how long suggestions are reused. They are cached in
// the process, not in Redis: a list is a few hundred bytes that every fan
// typing the same letters asks for, published events change rarely, and a
// local hit costs no round trip, so a flood of suggestions costs one query
// per prefix per process per TTL and nothing on Redis. A new event shows up
// in suggestions within this time.
const DefaultSuggestTTL = 30 * time.Second

// suggestCacheSize bounds the suggestion cache: prefixes are client input,
// so a scan of made-up prefixes evicts rather than grows it.
const suggestCacheSize = 10_000

// Class is a kind of read of the pool, each with its own bulkhead (Guard).
type Class string

// The classes. Seat-map fills and hotel search are not among them: their
// own caches (a fill lease, a short in-process cache) already bound them.
const (
	ClassSuggest Class = "suggest" // autocomplete
	ClassSearch  Class = "search"  // full-text search
	ClassEvent   Class = "event"   // event pages and their section sets
)

// Guard gives every class its own bulkhead sized by o: a class uses at most
// o.Slots of the pool's connections at once, so a flood of suggestions (or
// searches) leaves the rest of the pool to event pages, and a read that
// finds no slot within o.Wait fails with *bulkhead.FullError instead of
// queueing on the pool. Only reads that miss the caches take a slot. Call
// it before the service serves.
func (s *Service) Guard(o bulkhead.Options) *Service {
	s.gates = map[Class]*bulkhead.Bulkhead{}
	for _, c := range []Class{ClassSuggest, ClassSearch, ClassEvent} {
		s.gates[c] = bulkhead.New(string(c), o)
	}
	return s
}

// Refused is how many reads of class the bulkheads refused.
func (s *Service) Refused(c Class) int64 { return s.gates[c].Refused() }

// read runs fn in a slot of class c and returns what it read.
func read[T any](ctx context.Context, s *Service, c Class, fn func() (T, error)) (T, error) {
	var v T
	err := s.gates[c].Do(ctx, func() (err error) {
		v, err = fn()
		return err
	})
	return v, err
}

// sectionSet is an event's section IDs; nil for an unknown event.
type sectionSet map[string]struct{}

type cachedDetail struct {
	d       EventDetail
	expires time.Time
}

// New builds the service.
func New(reader *store.Reader) *Service {
	return &Service{reader: reader, DetailTTL: time.Second, SuggestTTL: DefaultSuggestTTL, details: map[string]cachedDetail{},
		sections: lru.New[string, sectionSet](sectionCacheSize), suggests: lru.New[string, []Suggestion](suggestCacheSize)}
}

type cursor struct {
	Rank     float32   `json:"r"`
	StartsAt time.Time `json:"s"`
	ID       string    `json:"i"`
	Query    uint64    `json:"q"` // the filters it pages through
}

func (q Query) fingerprint() uint64 {
	h := fnv.New64a()
	day := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s\x00%s", strings.TrimSpace(q.Text), strings.ToLower(q.City),
		strings.ToLower(q.Genre), day(q.From), day(q.To), q.Series)
	return h.Sum64()
}

// Search runs a query: relevance first (title and artist above venue, city
// and genre, above the description), then date.
func (s *Service) Search(ctx context.Context, q Query) (Page, error) {
	sq := store.SearchQuery{Text: q.Text, City: q.City, Genre: q.Genre, From: q.From, To: q.To, Limit: q.Limit, Series: q.Series}
	fp := q.fingerprint()
	if q.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(q.Cursor)
		var c cursor
		if err != nil || json.Unmarshal(raw, &c) != nil || c.ID == "" || c.Query != fp {
			return Page{}, ErrBadCursor
		}
		sq.After = &store.SearchCursor{Rank: c.Rank, StartsAt: c.StartsAt, ID: c.ID}
	}
	res, err := read(ctx, s, ClassSearch, func() (store.SearchPage, error) {
		return s.reader.SearchEvents(ctx, sq)
	})
	if err != nil {
		return Page{}, err
	}
	page := Page{Events: make([]Event, 0, len(res.Events))}
	for _, e := range res.Events {
		page.Events = append(page.Events, event(e))
	}
	if res.Next != nil {
		raw, _ := json.Marshal(cursor{Rank: res.Next.Rank, StartsAt: res.Next.StartsAt, ID: res.Next.ID, Query: fp})
		next := base64.RawURLEncoding.EncodeToString(raw)
		page.NextCursor = &next
	}
	return page, nil
}

func event(e store.EventSummary) Event {
	return Event{ID: e.ID, Title: e.Title, Artist: e.Artist, Venue: e.Venue, City: e.City, Timezone: e.Timezone, Genre: e.Genre,
		StartsAt: e.StartsAt.UTC(), OnsaleAt: e.OnsaleAt.UTC(), Currency: e.Currency, Metered: e.Metered}
}

// Suggest completes a prefix with event titles and artists. Answers are
// reused for SuggestTTL per normalised prefix (NormalizePrefix), and
// concurrent misses of one prefix share one query. The returned slice is
// shared with the cache: callers must not change it.
func (s *Service) Suggest(ctx context.Context, prefix string) ([]Suggestion, error) {
	key := NormalizePrefix(prefix)
	if out, ok := s.suggests.Get(key, time.Now()); ok {
		return out, nil
	}
	v, err, _ := s.group.Do("suggest\x00"+key, func() (any, error) {
		res, err := read(ctx, s, ClassSuggest, func() ([]store.Suggestion, error) {
			// The normalised prefix is what is asked, so every prefix
			// sharing a key gets the answer the key's query gives.
			return s.reader.SuggestEvents(ctx, key, 8)
		})
		if err != nil {
			return nil, err
		}
		out := make([]Suggestion, len(res))
		for i, r := range res {
			out[i] = Suggestion{Text: r.Text, EventID: r.EventID}
		}
		if s.SuggestTTL > 0 {
			s.suggests.Add(key, out, time.Now().Add(s.SuggestTTL))
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]Suggestion), nil
}

// NormalizePrefix is the form of a suggestion prefix that is cached and
// asked: lower case (the query matches case-insensitively anyway), spaces
// trimmed and runs of white space made one space, so "Demo  Night " and
// "demo night" are one entry.
func NormalizePrefix(prefix string) string {
	return strings.ToLower(strings.Join(strings.Fields(prefix), " "))
}

// Event reads the event page (store.ErrNotFound for an unknown event). Hot
// pages are reused for DetailTTL so a stampede on one event costs one query
// a second per process.
func (s *Service) Event(ctx context.Context, id string) (EventDetail, error) {
	now := time.Now()
	s.mu.Lock()
	if c, ok := s.details[id]; ok && now.Before(c.expires) {
		s.mu.Unlock()
		return c.d, nil
	}
	s.mu.Unlock()
	v, err, _ := s.group.Do(id, func() (any, error) {
		d, err := read(ctx, s, ClassEvent, func() (store.EventDetail, error) {
			return s.reader.GetEvent(ctx, id)
		})
		if err != nil {
			return EventDetail{}, err
		}
		out := EventDetail{Event: event(d.EventSummary), Description: d.Description, Sections: make([]Section, 0, len(d.Sections)),
			TicketTypes: make([]TicketType, 0, len(d.TicketTypes)), ServiceFee: money.Money{Amount: d.ServiceFee, Currency: d.Currency},
			SeriesID: d.SeriesID}
		for _, t := range d.TicketTypes {
			tt := TicketType{ID: t.ID, Name: t.Name, MaxPerOrder: t.MaxPerOrder, Requires: t.Requires, Prices: map[string]money.Money{}}
			for c, a := range t.Prices {
				tt.Prices[c] = money.Money{Amount: a, Currency: d.Currency}
			}
			out.TicketTypes = append(out.TicketTypes, tt)
		}
		for _, sec := range d.Sections {
			out.Sections = append(out.Sections, Section{ID: sec.ID, Name: sec.Name, Kind: string(sec.Kind),
				Capacity: sec.Capacity, Available: sec.Available,
				BasePrice: money.Money{Amount: sec.BasePrice, Currency: d.Currency}, Category: sec.Category})
		}
		if s.DetailTTL > 0 {
			s.mu.Lock()
			if len(s.details) > 10000 {
				clear(s.details) // bounded: a scan of unknown IDs cannot grow it
			}
			s.details[id] = cachedDetail{d: out, expires: time.Now().Add(s.DetailTTL)}
			s.mu.Unlock()
		}
		return out, nil
	})
	if err != nil {
		return EventDetail{}, err
	}
	return v.(EventDetail), nil
}

// Section sets are cached per process: an event's sections rarely change, and
// a scan of made-up event IDs costs one query per ID per negativeTTL, in a
// cache that never holds more than sectionCacheSize events.
const (
	sectionCacheSize = 10_000
	sectionTTL       = 30 * time.Second
	negativeTTL      = 5 * time.Second
)

// Sections reports whether the event exists (store.ErrNotFound if
// not) and, when it does, returns a check of its section IDs, for the live
// stream to refuse subscriptions to sections it does not have.
func (s *Service) Sections(ctx context.Context, eventID string) (func(sectionID string) bool, error) {
	now := time.Now()
	set, ok := s.sections.Get(eventID, now)
	if !ok {
		v, err, _ := s.group.Do("sections\x00"+eventID, func() (any, error) {
			ids, err := read(ctx, s, ClassEvent, func() ([]string, error) {
				return s.reader.EventSectionIDs(ctx, eventID)
			})
			if errors.Is(err, store.ErrNotFound) {
				s.sections.Add(eventID, nil, time.Now().Add(negativeTTL))
				return sectionSet(nil), nil
			}
			if err != nil {
				return nil, err
			}
			set := make(sectionSet, len(ids))
			for _, id := range ids {
				set[id] = struct{}{}
			}
			s.sections.Add(eventID, set, time.Now().Add(sectionTTL))
			return set, nil
		})
		if err != nil {
			return nil, err
		}
		set = v.(sectionSet)
	}
	if set == nil {
		return nil, store.ErrNotFound
	}
	return func(id string) bool { _, ok := set[id]; return ok }, nil
}

// CachedSectionSets is how many events' section sets the process holds.
func (s *Service) CachedSectionSets() int { return s.sections.Len() }
