package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/encore-tickets/encore/vocab"
)

// ReaderRole is the role the browse plane reads as (schema/migrations/0003).
// It may SELECT venues, events, sections and seats, and nothing else.
const ReaderRole = "encore_reader"

// Reader runs the browse plane's SQL on its own small pool whose sessions
// cannot write: every connection switches to a read-only role (or logs in as
// one) and starts read-only transactions. A bug in a read path can therefore
// neither write nor starve the buy plane's pool.
type Reader struct {
	pool *pgxpool.Pool
}

// NewReader wraps a pool opened with OpenReader.
func NewReader(pool *pgxpool.Pool) *Reader { return &Reader{pool: pool} }

// Pool exposes the pool for health checks.
func (r *Reader) Pool() *pgxpool.Pool { return r.pool }

// OpenReader connects the browse plane's pool. When role is not empty every
// connection runs SET ROLE role first (the connecting user must be a superuser
// or a member of role); either way sessions default to read-only transactions
// and a short statement timeout (3s unless opts says otherwise).
func OpenReader(ctx context.Context, url, role string, opts PoolOptions) (*pgxpool.Pool, error) {
	if opts.StatementTimeout <= 0 {
		opts.StatementTimeout = 3 * time.Second
	}
	opts.Role, opts.ReadOnly = role, true
	if opts.ApplicationName == "" {
		opts.ApplicationName = "encore-browse"
	}
	pool, err := OpenPool(ctx, url, opts)
	if err != nil {
		return nil, fmt.Errorf("store: reader pool: %w", err)
	}
	return pool, nil
}

// EventSummary is one event as search lists it.
type EventSummary struct {
	ID     string
	Title  string
	Artist string
	Venue  string
	City   string
	// Timezone is the venue's IANA zone, in which the event's times are
	// shown.
	Timezone string
	Genre    string
	StartsAt time.Time
	OnsaleAt time.Time
	Currency string
	Metered  bool
}

// SearchCursor is the position after the last event of a page: results are
// ordered by rank (descending), then start time and ID.
type SearchCursor struct {
	Rank     float32
	StartsAt time.Time
	ID       string
}

// SearchQuery filters and pages the catalogue. Text is matched in full-text
// over title, artist, venue, city, genre and description.
type SearchQuery struct {
	Text  string
	City  string
	Genre string
	From  *time.Time // starts_at >= From
	To    *time.Time // starts_at < To
	// Series keeps the dates of one series only.
	Series string
	After  *SearchCursor
	Limit  int
}

// SearchPage is one page of results; Next is nil on the last page.
type SearchPage struct {
	Events []EventSummary
	Next   *SearchCursor
}

// SearchEvents ranks matching published events by relevance (title and artist weigh
// most, the description least), then by date.
func (r *Reader) SearchEvents(ctx context.Context, q SearchQuery) (SearchPage, error) {
	limit := q.Limit
	if limit <= 0 || limit > 100 {
		limit = 20
	}
	var afterRank *float32
	var afterStarts *time.Time
	var afterID string
	if q.After != nil {
		afterRank, afterStarts, afterID = &q.After.Rank, &q.After.StartsAt, q.After.ID
	}
	rows, err := r.pool.Query(ctx, `
		WITH q AS (SELECT CASE WHEN numnode(websearch_to_tsquery('english', $1)) = 0 THEN NULL
		                       ELSE websearch_to_tsquery('english', $1) END AS query),
		hits AS (
			SELECT e.id, e.title, e.artist, v.name AS venue, v.city, v.timezone, e.genre, e.starts_at, e.onsale_at,
			       e.currency, e.metered,
			       CASE WHEN q.query IS NULL THEN 0::real ELSE ts_rank(e.search, q.query) END AS rank
			FROM events e JOIN venues v ON v.id = e.venue_id CROSS JOIN q
			WHERE e.status = 'PUBLISHED'
			  AND ($1 = '' OR e.search @@ q.query)
			  AND ($2 = '' OR lower(v.city) = lower($2))
			  AND ($3 = '' OR lower(e.genre) = lower($3))
			  AND ($4::timestamptz IS NULL OR e.starts_at >= $4)
			  AND ($5::timestamptz IS NULL OR e.starts_at < $5)
			  AND ($10 = '' OR e.series_id = $10))
		SELECT id, title, artist, venue, city, timezone, genre, starts_at, onsale_at, currency, metered, rank FROM hits
		WHERE $6::real IS NULL OR rank < $6 OR (rank = $6 AND (starts_at, id) > ($7::timestamptz, $8::text))
		ORDER BY rank DESC, starts_at, id
		LIMIT $9`,
		strings.TrimSpace(q.Text), q.City, q.Genre, q.From, q.To, afterRank, afterStarts, afterID, limit+1, q.Series)
	if err != nil {
		return SearchPage{}, err
	}
	defer rows.Close()
	page := SearchPage{Events: []EventSummary{}}
	var last SearchCursor
	for rows.Next() {
		var e EventSummary
		var rank float32
		if err := rows.Scan(&e.ID, &e.Title, &e.Artist, &e.Venue, &e.City, &e.Timezone, &e.Genre, &e.StartsAt, &e.OnsaleAt,
			&e.Currency, &e.Metered, &rank); err != nil {
			return SearchPage{}, err
		}
		if len(page.Events) == limit {
			page.Next = &SearchCursor{Rank: last.Rank, StartsAt: last.StartsAt, ID: last.ID}
			break
		}
		page.Events = append(page.Events, e)
		last = SearchCursor{Rank: rank, StartsAt: e.StartsAt, ID: e.ID}
	}
	return page, rows.Err()
}

// Suggestion is one autocomplete answer: an event title or an artist, with
// the event it leads to (the soonest, for an artist with several).
type Suggestion struct {
	Text    string
	EventID string
}

// likeEscape makes s a literal inside a LIKE pattern (escape character \).
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// SuggestEvents completes a prefix: titles and artists that start with it
// first, then those with a word that starts with it, then trigram-similar
// ones (typos), each group by similarity and date.
func (r *Reader) SuggestEvents(ctx context.Context, prefix string, limit int) ([]Suggestion, error) {
	prefix = strings.TrimSpace(prefix)
	if prefix == "" {
		return []Suggestion{}, nil
	}
	if limit <= 0 || limit > 20 {
		limit = 8
	}
	rows, err := r.pool.Query(ctx, `
		WITH c AS (
			SELECT f.text, e.id, e.starts_at,
			       CASE WHEN f.text ILIKE $1 || '%' THEN 0
			            WHEN f.text ILIKE '% ' || $1 || '%' THEN 1 ELSE 2 END AS tier,
			       similarity(f.text, $2) AS sim
			FROM events e CROSS JOIN LATERAL (VALUES (e.title), (e.artist)) AS f(text)
			WHERE e.status = 'PUBLISHED' AND f.text <> '' AND (e.title ILIKE '%' || $1 || '%' OR e.artist ILIKE '%' || $1 || '%'
			                        OR e.title % $2 OR e.artist % $2)
			  AND (f.text ILIKE '%' || $1 || '%' OR f.text % $2)),
		best AS (
			SELECT DISTINCT ON (lower(text)) text, id, tier, sim, starts_at FROM c
			ORDER BY lower(text), tier, sim DESC, starts_at, id)
		SELECT text, id FROM best ORDER BY tier, sim DESC, starts_at, text LIMIT $3`,
		likeEscape(prefix), prefix, limit)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Suggestion, error) {
		var s Suggestion
		err := row.Scan(&s.Text, &s.EventID)
		return s, err
	})
	if out == nil {
		out = []Suggestion{}
	}
	return out, err
}

// SectionSummary is a section with its advisory availability.
type SectionSummary struct {
	ID        string
	Name      string
	Kind      vocab.SectionKind
	Capacity  int
	Available int
	BasePrice int64
	Category  string
}

// EventDetail is an event with its sections.
type EventDetail struct {
	EventSummary
	Description string
	Sections    []SectionSummary
	// TicketTypes are the event's types in order; ServiceFee is charged per
	// ticket; SeriesID links the dates of one series.
	TicketTypes []TicketType
	ServiceFee  int64
	SeriesID    string
	Questions   []Question
}

// EventSectionIDs lists the IDs of the event's sections; ErrNotFound when
// there is no such event.
func (r *Reader) EventSectionIDs(ctx context.Context, eventID string) ([]string, error) {
	rows, err := r.pool.Query(ctx, `SELECT sec.id FROM events e LEFT JOIN sections sec ON sec.event_id = e.id
		WHERE e.id = $1 AND e.status = 'PUBLISHED'`, eventID)
	if err != nil {
		return nil, err
	}
	var found bool
	ids, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (string, error) {
		var id *string
		found = true
		if err := row.Scan(&id); err != nil || id == nil {
			return "", err
		}
		return *id, nil
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, ErrNotFound
	}
	out := ids[:0]
	for _, id := range ids {
		if id != "" {
			out = append(out, id)
		}
	}
	return out, nil
}

// GetEvent reads one published event and its sections' counts in one
// snapshot; ErrNotFound for a draft, as for an unknown event.
// Availability is advisory: the hold is the only authoritative check.
func (r *Reader) GetEvent(ctx context.Context, eventID string) (EventDetail, error) {
	var d EventDetail
	err := pgx.BeginTxFunc(ctx, r.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			err := tx.QueryRow(ctx, `SELECT e.id, e.title, e.artist, v.name, v.city, v.timezone, e.genre, e.description,
				e.starts_at, e.onsale_at, e.currency, e.metered, e.service_fee, coalesce(e.series_id, ''), `+ticketTypesJSON+`, `+questionsJSON+`
				FROM events e JOIN venues v ON v.id = e.venue_id WHERE e.id = $1 AND e.status = 'PUBLISHED'`, eventID).Scan(
				&d.ID, &d.Title, &d.Artist, &d.Venue, &d.City, &d.Timezone, &d.Genre, &d.Description,
				&d.StartsAt, &d.OnsaleAt, &d.Currency, &d.Metered, &d.ServiceFee, &d.SeriesID, &d.TicketTypes, &d.Questions)
			if err = orNotFound(err); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, `SELECT sec.id, sec.name, sec.kind, sec.capacity,
				CASE WHEN sec.kind = 'general' THEN sec.capacity - sec.ga_taken
				     ELSE (SELECT count(*) FROM seats s WHERE s.section_id = sec.id AND s.status = 'AVAILABLE') END,
				sec.base_price, sec.category
				FROM sections sec WHERE sec.event_id = $1 ORDER BY sec.sort_order, sec.id`, eventID)
			if err != nil {
				return err
			}
			d.Sections, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (SectionSummary, error) {
				var s SectionSummary
				err := row.Scan(&s.ID, &s.Name, &s.Kind, &s.Capacity, &s.Available, &s.BasePrice, &s.Category)
				return s, err
			})
			return err
		})
	if d.Sections == nil {
		d.Sections = []SectionSummary{}
	}
	return d, err
}
