package gate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/encore-tickets/encore/manifest"
	"github.com/encore-tickets/encore/tickets"
)

// StoreOptions tune the SQLite ledger.
type StoreOptions struct {
	// Synchronous is SQLite's synchronous pragma: FULL (the default) makes
	// every accepted entry durable before the fan is let in, even through a
	// power cut; NORMAL is faster and can lose the last entries on a power
	// cut (never on a process crash), which could let those tickets in again.
	Synchronous string
	// BusyTimeout is how long a write waits for another gate process
	// holding the write lock before the scan fails closed. Default 5s.
	BusyTimeout time.Duration
}

// DSN is the connection string every gate connection uses, and the raw
// insert benchmark too: WAL, the synchronous level, a busy timeout and
// immediate write transactions.
func DSN(path string, opt StoreOptions) string {
	sync := strings.ToUpper(opt.Synchronous)
	if sync == "" {
		sync = "FULL"
	}
	busy := opt.BusyTimeout
	if busy <= 0 {
		busy = 5 * time.Second
	}
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", sync)
	q.Set("_busy_timeout", fmt.Sprint(busy.Milliseconds()))
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

const schemaSQL = `
CREATE TABLE IF NOT EXISTS manifests (
    event_id     TEXT PRIMARY KEY,
    version      INTEGER NOT NULL,
    kind         TEXT NOT NULL,
    expires_at   INTEGER NOT NULL, -- Unix milliseconds
    imported_at  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tickets (
    id             TEXT PRIMARY KEY,
    event_id       TEXT NOT NULL,
    section_id     TEXT NOT NULL,
    seat_id        TEXT NOT NULL DEFAULT '',
    secret_sealed  BLOB NOT NULL, -- sealed under the manifest key, bound to the ticket ID
    revoked        INTEGER NOT NULL DEFAULT 0,
    version        INTEGER NOT NULL,
    key_generation INTEGER NOT NULL DEFAULT 0, -- codes of an earlier device key generation are refused
    booking_code   TEXT NOT NULL DEFAULT '', -- the reservation's ID, for lookup at the door
    booking_key    TEXT NOT NULL DEFAULT '', -- booking_code upper-cased without dashes: what a prefix search matches
    attendee       TEXT NOT NULL DEFAULT ''  -- the fan the booking names
) WITHOUT ROWID;
-- The ledger: one row per ticket, ever. Two gates racing on one ticket both
-- INSERT; the primary key lets exactly one in. With re-entry, leaving and
-- coming back are one conditional UPDATE each (WHERE inside = 1 / 0), so two
-- gates racing on a fan's return let them back in once.
CREATE TABLE IF NOT EXISTS entries (
    ticket_id      TEXT PRIMARY KEY,
    gate_id        TEXT NOT NULL,
    entered_at     INTEGER NOT NULL, -- Unix milliseconds
    synced_at      INTEGER,          -- offline scanners: when the entry reached the ledger
    device_id      TEXT NOT NULL DEFAULT '', -- the scanner that let the ticket in first
    inside         INTEGER NOT NULL DEFAULT 1,
    moved_at       INTEGER,          -- the last scan out or back in after the first entry
    moved_gate_id  TEXT,
    moved_device_id TEXT
) WITHOUT ROWID;
-- Double entries that offline scanners let in, found when they synced.
CREATE TABLE IF NOT EXISTS double_entries (
    ticket_id          TEXT NOT NULL,
    first_gate_id      TEXT NOT NULL,
    first_entered_at   INTEGER NOT NULL,
    second_gate_id     TEXT NOT NULL,
    second_entered_at  INTEGER NOT NULL,
    found_at           INTEGER NOT NULL,
    PRIMARY KEY (ticket_id, second_gate_id, second_entered_at)
) WITHOUT ROWID;
-- Scanners paired with a code from encore gate pair. Only the token's
-- SHA-256 is kept; a revoked device's next request is refused.
CREATE TABLE IF NOT EXISTS devices (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    token_sha256  BLOB NOT NULL UNIQUE,
    paired_at     INTEGER NOT NULL,
    revoked_at    INTEGER
);
-- Pairing codes: short, single use, expiring; kept as SHA-256 only.
CREATE TABLE IF NOT EXISTS pairing_codes (
    code_sha256  BLOB PRIMARY KEY,
    name         TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    used_at      INTEGER,
    device_id    TEXT
) WITHOUT ROWID;
`

// upgradeSchema adds to a ledger made by an earlier version the columns
// schemaSQL's CREATE TABLE IF NOT EXISTS left out.
func upgradeSchema(db *sql.DB) error {
	columns := []struct{ table, column, decl string }{
		{"manifests", "reentry", "INTEGER NOT NULL DEFAULT 0"},
		{"tickets", "key_generation", "INTEGER NOT NULL DEFAULT 0"},
		{"tickets", "booking_code", "TEXT NOT NULL DEFAULT ''"},
		{"tickets", "booking_key", "TEXT NOT NULL DEFAULT ''"},
		{"tickets", "attendee", "TEXT NOT NULL DEFAULT ''"},
		{"entries", "device_id", "TEXT NOT NULL DEFAULT ''"},
		{"entries", "inside", "INTEGER NOT NULL DEFAULT 1"},
		{"entries", "moved_at", "INTEGER"},
		{"entries", "moved_gate_id", "TEXT"},
		{"entries", "moved_device_id", "TEXT"},
	}
	for _, c := range columns {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM pragma_table_info(?) WHERE name = ?`, c.table, c.column).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			if _, err := db.Exec(`ALTER TABLE ` + c.table + ` ADD COLUMN ` + c.column + ` ` + c.decl); err != nil {
				return err
			}
		}
	}
	return nil
}

// A ticket's revoked column: 0 valid, 1 revoked (refunded, cancelled, no
// longer listed), 2 marked during a full import, 3 transferred, 4 listed
// for resale (a later manifest may make it valid again).
const (
	revokedTransferred      = "3"
	revokedTransferredValue = 3
	revokedListed           = "4"
	revokedListedValue      = 4
)

// Store is a gate's SQLite ledger. Reads run on a pool; writes on one
// connection per process, so writers of one process queue in Go rather than
// spin on SQLite's lock. Other processes on the same file wait up to the
// busy timeout.
type Store struct {
	path   string
	read   *sql.DB
	write  *sql.DB
	sealer *tickets.Keyring
}

// OpenStore opens (creating if needed) the ledger at path. Secrets are kept
// sealed at rest under the manifest key.
func OpenStore(path string, manifestKey []byte, opt StoreOptions) (*Store, error) {
	sealer, err := tickets.NewKeyring(manifestKey)
	if err != nil {
		return nil, err
	}
	dsn := DSN(path, opt)
	write, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, err
	}
	write.SetMaxOpenConns(1)
	write.SetConnMaxIdleTime(0)
	if _, err := write.Exec(schemaSQL); err != nil {
		_ = write.Close()
		return nil, fmt.Errorf("gate: open %s: %w", path, err)
	}
	if err := upgradeSchema(write); err != nil {
		_ = write.Close()
		return nil, fmt.Errorf("gate: upgrade %s: %w", path, err)
	}
	read, err := sql.Open("sqlite3", dsn)
	if err != nil {
		_ = write.Close()
		return nil, err
	}
	read.SetMaxOpenConns(8)
	read.SetMaxIdleConns(8)
	return &Store{path: path, read: read, write: write, sealer: sealer}, nil
}

// Path is the SQLite file.
func (s *Store) Path() string { return s.path }

// Close closes both pools.
func (s *Store) Close() error { return errors.Join(s.write.Close(), s.read.Close()) }

// Ping checks the file answers.
func (s *Store) Ping(ctx context.Context) error {
	var n int
	return s.read.QueryRowContext(ctx, `SELECT count(*) FROM manifests`).Scan(&n)
}

// ManifestInfo is what the ledger holds of one event's manifest.
type ManifestInfo struct {
	EventID    string
	Version    int64
	Kind       string
	ExpiresAt  time.Time
	ImportedAt time.Time
	Tickets    int
	Revoked    int
	Entries    int
}

// Manifests lists the events the ledger holds manifests for.
func (s *Store) Manifests(ctx context.Context) ([]ManifestInfo, error) {
	return queryAll(ctx, s.read, `SELECT m.event_id, m.version, m.kind, m.expires_at, m.imported_at,
		(SELECT count(*) FROM tickets t WHERE t.event_id = m.event_id AND NOT t.revoked),
		(SELECT count(*) FROM tickets t WHERE t.event_id = m.event_id AND t.revoked),
		(SELECT count(*) FROM entries e JOIN tickets t ON t.id = e.ticket_id WHERE t.event_id = m.event_id)
		FROM manifests m ORDER BY m.event_id`, func(rows *sql.Rows) (ManifestInfo, error) {
		var m ManifestInfo
		var exp, imp int64
		err := rows.Scan(&m.EventID, &m.Version, &m.Kind, &exp, &imp, &m.Tickets, &m.Revoked, &m.Entries)
		m.ExpiresAt, m.ImportedAt = time.UnixMilli(exp).UTC(), time.UnixMilli(imp).UTC()
		return m, err
	})
}

// ImportResult says what an import changed.
type ImportResult struct {
	EventID     string
	Kind        string
	FromVersion int64
	Version     int64
	Tickets     int // valid tickets listed
	Revoked     int // tickets the import revoked (a full import: those no longer listed)
}

// VersionError refuses a manifest that does not apply on top of what the
// ledger holds.
type VersionError struct {
	EventID             string
	Kind                string
	Held, Version, Base int64
}

func (e *VersionError) Error() string {
	switch {
	case e.Kind == manifest.KindDelta && e.Held == 0:
		return fmt.Sprintf("gate: %s: a delta manifest needs a full one first", e.EventID)
	case e.Kind == manifest.KindDelta && e.Base > e.Held:
		return fmt.Sprintf("gate: %s: this delta applies from version %d but the gate holds %d; import the export it follows first",
			e.EventID, e.Base, e.Held)
	default:
		return fmt.Sprintf("gate: %s: manifest version %d is not newer than the version %d already imported (a later export supersedes an earlier one)",
			e.EventID, e.Version, e.Held)
	}
}

// Import applies an opened manifest in one transaction. A full manifest
// replaces the event's ticket list (tickets no longer listed are revoked;
// entries are never touched); a delta adds the tickets it lists and revokes
// the ones it names. A manifest not newer than the one held is refused.
func (s *Store) Import(ctx context.Context, m *manifest.Manifest, now time.Time) (ImportResult, error) {
	res := ImportResult{EventID: m.EventID, Kind: m.Kind, Version: m.Version, Tickets: len(m.Body.Tickets)}
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return res, err
	}
	defer func() { _ = tx.Rollback() }()
	err = tx.QueryRowContext(ctx, `SELECT version FROM manifests WHERE event_id = ?`, m.EventID).Scan(&res.FromVersion)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return res, err
	}
	verr := &VersionError{EventID: m.EventID, Kind: m.Kind, Held: res.FromVersion, Version: m.Version, Base: m.BaseVersion}
	if m.Version <= res.FromVersion {
		return res, verr
	}
	if m.Kind == manifest.KindDelta && (res.FromVersion == 0 || m.BaseVersion > res.FromVersion) {
		return res, verr
	}
	if m.Kind == manifest.KindFull {
		if _, err := tx.ExecContext(ctx, `UPDATE tickets SET revoked = 2 WHERE event_id = ? AND NOT revoked`, m.EventID); err != nil {
			return res, err
		}
	}
	// A full import restores a listed ticket (the newer snapshot is the
	// truth); a delta never un-revokes one.
	upsert := `INSERT INTO tickets (id, event_id, section_id, seat_id, secret_sealed, revoked, version, key_generation,
		booking_code, booking_key, attendee) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET event_id = excluded.event_id, section_id = excluded.section_id, seat_id = excluded.seat_id,
		secret_sealed = excluded.secret_sealed, revoked = excluded.revoked, version = excluded.version, key_generation = excluded.key_generation,
		booking_code = excluded.booking_code, booking_key = excluded.booking_key, attendee = excluded.attendee`
	if m.Kind == manifest.KindDelta {
		// A delta lists a ticket again when its codes moved to another
		// device (only the generation moves, and only forward) or when it
		// was handed to another fan (it is refused from then on).
		upsert = `INSERT INTO tickets (id, event_id, section_id, seat_id, secret_sealed, revoked, version, key_generation,
			booking_code, booking_key, attendee) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET key_generation = max(key_generation, excluded.key_generation),
			revoked = CASE WHEN excluded.revoked = ` + revokedTransferred + ` THEN excluded.revoked
				WHEN excluded.revoked = ` + revokedListed + ` AND revoked = 0 THEN excluded.revoked
				WHEN revoked = ` + revokedListed + ` THEN excluded.revoked ELSE revoked END`
	}
	ins, err := tx.PrepareContext(ctx, upsert)
	if err != nil {
		return res, err
	}
	defer ins.Close()
	for _, e := range m.Body.Tickets {
		sealed, err := s.sealer.Seal(e.Secret, e.ID)
		if err != nil {
			return res, err
		}
		revoked := 0
		if e.Transferred {
			revoked = revokedTransferredValue
		} else if e.Listed {
			revoked = revokedListedValue
		}
		if _, err := ins.ExecContext(ctx, e.ID, m.EventID, e.SectionID, e.SeatID, sealed, revoked, m.Version, e.Generation,
			e.BookingCode, bookingKey(e.BookingCode), e.Attendee); err != nil {
			return res, err
		}
	}
	revoke, err := tx.PrepareContext(ctx, `UPDATE tickets SET revoked = 1, version = ? WHERE id = ? AND event_id = ? AND NOT revoked`)
	if err != nil {
		return res, err
	}
	defer revoke.Close()
	for _, id := range m.Body.Revoked {
		r, err := revoke.ExecContext(ctx, m.Version, id, m.EventID)
		if err != nil {
			return res, err
		}
		n, _ := r.RowsAffected()
		res.Revoked += int(n)
	}
	if m.Kind == manifest.KindFull {
		r, err := tx.ExecContext(ctx, `UPDATE tickets SET revoked = 1, version = ? WHERE event_id = ? AND revoked = 2`, m.Version, m.EventID)
		if err != nil {
			return res, err
		}
		n, _ := r.RowsAffected()
		res.Revoked += int(n)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO manifests (event_id, version, kind, expires_at, imported_at, reentry) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (event_id) DO UPDATE SET version = excluded.version, kind = excluded.kind,
		expires_at = excluded.expires_at, imported_at = excluded.imported_at, reentry = excluded.reentry`,
		m.EventID, m.Version, m.Kind, m.ExpiresAt.UnixMilli(), now.UnixMilli(), m.Reentry); err != nil {
		return res, err
	}
	return res, tx.Commit()
}

// EventReentry is the re-entry rule the event's manifest carries (false
// with no manifest).
func (s *Store) EventReentry(ctx context.Context, eventID string) (bool, error) {
	var on bool
	err := s.read.QueryRowContext(ctx, `SELECT reentry FROM manifests WHERE event_id = ?`, eventID).Scan(&on)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return on, err
}

// ticketRow is what a scan reads: the manifest's expiry for the gate's event
// and, when the ticket is known, the ticket.
type ticketRow struct {
	manifestExpires int64
	reentry         bool // the event's rule, from its manifest
	found           bool
	eventID         string
	sectionID       string
	seatID          string
	secret          []byte
	revoked         bool
	transferred     bool // revoked because it was handed to another fan
	listed          bool // revoked while its holder offers it for resale
	generation      int64
}

// lookup is a scan's one read.
func (s *Store) lookup(ctx context.Context, eventID, ticketID string) (ticketRow, bool, error) {
	var r ticketRow
	var tid, ev, sec, seat sql.NullString
	var sealed []byte
	var revoked, generation sql.NullInt64
	err := s.read.QueryRowContext(ctx, `SELECT m.expires_at, m.reentry, t.id, t.event_id, t.section_id, t.seat_id, t.secret_sealed, t.revoked, t.key_generation
		FROM manifests m LEFT JOIN tickets t ON t.id = ? WHERE m.event_id = ?`, ticketID, eventID).
		Scan(&r.manifestExpires, &r.reentry, &tid, &ev, &sec, &seat, &sealed, &revoked, &generation)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil // no manifest for this event
	}
	if err != nil {
		return r, false, err
	}
	if tid.Valid {
		secret, err := s.sealer.Open(sealed, ticketID)
		if err != nil {
			return r, false, fmt.Errorf("gate: stored secret of %s: %w", ticketID, err)
		}
		r.found, r.eventID, r.sectionID, r.seatID, r.secret, r.revoked = true, ev.String, sec.String, seat.String, secret, revoked.Int64 != 0
		r.transferred = revoked.Int64 == revokedTransferredValue
		r.listed = revoked.Int64 == revokedListedValue
		r.generation = generation.Int64
	}
	return r, true, nil
}

// Entry is one admission in the ledger: the ticket's first entry, and
// where it stands now.
type Entry struct {
	TicketID  string
	GateID    string
	EnteredAt time.Time
	// DeviceID is the scanner that let it in ("" before devices were
	// recorded, or for an offline scanner's entry of that age).
	DeviceID string
	// Inside is false once the ticket was scanned out. MovedAt and
	// MovedGateID are its last scan out or back in (zero: none since the
	// first entry).
	Inside      bool
	MovedAt     time.Time
	MovedGateID string
}

// enter is the scan's one INSERT. A ticket already in the ledger returns
// the entry that got there first.
func (s *Store) enter(ctx context.Context, ticketID, gateID, deviceID string, at time.Time) (first *Entry, err error) {
	_, err = s.write.ExecContext(ctx, `INSERT INTO entries (ticket_id, gate_id, entered_at, device_id) VALUES (?, ?, ?, ?)`,
		ticketID, gateID, at.UnixMilli(), deviceID)
	if err == nil {
		return nil, nil
	}
	if !isUniqueViolation(err) {
		return nil, err
	}
	e, err := s.entry(ctx, ticketID)
	if err != nil {
		return nil, err
	}
	return &e, nil
}

func (s *Store) entry(ctx context.Context, ticketID string) (Entry, error) {
	e := Entry{TicketID: ticketID}
	var at int64
	var movedAt sql.NullInt64
	var movedGate sql.NullString
	err := s.read.QueryRowContext(ctx, `SELECT gate_id, entered_at, device_id, inside, moved_at, moved_gate_id
		FROM entries WHERE ticket_id = ?`, ticketID).Scan(&e.GateID, &at, &e.DeviceID, &e.Inside, &movedAt, &movedGate)
	e.EnteredAt = time.UnixMilli(at).UTC()
	if movedAt.Valid {
		e.MovedAt, e.MovedGateID = time.UnixMilli(movedAt.Int64).UTC(), movedGate.String
	}
	return e, err
}

// move is a scan out (inside false) or back in (inside true) of a ticket
// that entered before: one conditional UPDATE, so of two gates racing on
// it exactly one moves it. It reports whether this scan did.
func (s *Store) move(ctx context.Context, ticketID, gateID, deviceID string, inside bool, at time.Time) (bool, error) {
	res, err := s.write.ExecContext(ctx, `UPDATE entries SET inside = ?, moved_at = ?, moved_gate_id = ?, moved_device_id = ?
		WHERE ticket_id = ? AND inside = ?`, inside, at.UnixMilli(), gateID, deviceID, ticketID, !inside)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// bookingKey is what a booking-code search compares: the code upper-cased,
// without dashes or spaces.
func bookingKey(code string) string {
	return strings.ToUpper(strings.NewReplacer("-", "", " ", "").Replace(code))
}

func isUniqueViolation(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey || se.ExtendedCode == sqlite3.ErrConstraintUnique)
}

// DoubleEntry is a ticket let in twice, found when an offline scanner synced.
type DoubleEntry struct {
	TicketID string
	SeatID   string
	First    Entry
	Second   Entry
}

// SyncReport is what Sync did.
type SyncReport struct {
	Pushed       int           // offline entries newly written to the ledger
	AlreadyThere int           // offline entries the ledger already had (an earlier sync)
	Pulled       int           // ledger entries copied to the offline copy
	Doubles      []DoubleEntry // tickets let in twice
}

// Sync reconciles an offline scanner's local copy with the ledger: every
// entry the scanner recorded goes into the ledger (the same one INSERT); a
// ticket the ledger already let in at another gate or time is a double
// entry, recorded in the ledger's double_entries and reported. Then the
// ledger's entries are copied to the local copy, so the scanner knows them
// before it goes offline again. Running it twice reports nothing new.
func Sync(ctx context.Context, ledger, local *Store, now time.Time) (SyncReport, error) {
	var rep SyncReport
	type pending struct {
		e    Entry
		seat string
	}
	todo, err := queryAll(ctx, local.read, `SELECT e.ticket_id, e.gate_id, e.entered_at, e.device_id, coalesce(t.seat_id, '')
		FROM entries e LEFT JOIN tickets t ON t.id = e.ticket_id WHERE e.synced_at IS NULL ORDER BY e.entered_at`,
		func(rows *sql.Rows) (pending, error) {
			var p pending
			var err error
			var device string
			p.e, err = scanEntry(rows, &device, &p.seat)
			p.e.DeviceID = device
			return p, err
		})
	if err != nil {
		return rep, err
	}
	for _, p := range todo {
		first, err := ledger.enter(ctx, p.e.TicketID, p.e.GateID, p.e.DeviceID, p.e.EnteredAt)
		if err != nil {
			return rep, fmt.Errorf("gate: sync %s: %w", p.e.TicketID, err)
		}
		switch {
		case first == nil:
			rep.Pushed++
		case first.GateID == p.e.GateID && first.EnteredAt.Equal(p.e.EnteredAt):
			rep.AlreadyThere++
		default:
			d := DoubleEntry{TicketID: p.e.TicketID, SeatID: p.seat, First: *first, Second: p.e}
			if d.Second.EnteredAt.Before(d.First.EnteredAt) {
				d.First, d.Second = d.Second, d.First
			}
			if _, err := ledger.write.ExecContext(ctx, `INSERT INTO double_entries (ticket_id, first_gate_id, first_entered_at,
				second_gate_id, second_entered_at, found_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
				d.TicketID, d.First.GateID, d.First.EnteredAt.UnixMilli(), d.Second.GateID, d.Second.EnteredAt.UnixMilli(),
				now.UnixMilli()); err != nil {
				return rep, err
			}
			rep.Doubles = append(rep.Doubles, d)
		}
		if _, err := local.write.ExecContext(ctx, `UPDATE entries SET synced_at = ? WHERE ticket_id = ?`,
			now.UnixMilli(), p.e.TicketID); err != nil {
			return rep, err
		}
	}
	// Pull: the ledger's entries the local copy lacks.
	pull, err := queryAll(ctx, ledger.read, `SELECT ticket_id, gate_id, entered_at, device_id FROM entries`,
		func(rows *sql.Rows) (Entry, error) {
			var device string
			e, err := scanEntry(rows, &device)
			e.DeviceID = device
			return e, err
		})
	if err != nil {
		return rep, err
	}
	tx, err := local.write.BeginTx(ctx, nil)
	if err != nil {
		return rep, err
	}
	defer func() { _ = tx.Rollback() }()
	for _, e := range pull {
		r, err := tx.ExecContext(ctx, `INSERT INTO entries (ticket_id, gate_id, entered_at, synced_at, device_id) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (ticket_id) DO NOTHING`, e.TicketID, e.GateID, e.EnteredAt.UnixMilli(), now.UnixMilli(), e.DeviceID)
		if err != nil {
			return rep, err
		}
		n, _ := r.RowsAffected()
		rep.Pulled += int(n)
	}
	slices.SortFunc(rep.Doubles, func(a, b DoubleEntry) int { return strings.Compare(a.TicketID, b.TicketID) })
	return rep, tx.Commit()
}

// DoubleEntries lists every double entry the ledger has recorded.
func (s *Store) DoubleEntries(ctx context.Context) ([]DoubleEntry, error) {
	return queryAll(ctx, s.read, `SELECT d.ticket_id, coalesce(t.seat_id, ''), d.first_gate_id, d.first_entered_at,
		d.second_gate_id, d.second_entered_at FROM double_entries d LEFT JOIN tickets t ON t.id = d.ticket_id
		ORDER BY d.first_entered_at, d.ticket_id`, func(rows *sql.Rows) (DoubleEntry, error) {
		var d DoubleEntry
		var a, b int64
		err := rows.Scan(&d.TicketID, &d.SeatID, &d.First.GateID, &a, &d.Second.GateID, &b)
		d.First.TicketID, d.Second.TicketID = d.TicketID, d.TicketID
		d.First.EnteredAt, d.Second.EnteredAt = time.UnixMilli(a).UTC(), time.UnixMilli(b).UTC()
		return d, err
	})
}

// queryAll runs a read and scans each row with scan. The rows are closed
// when it returns, so the caller may write to the ledger straight after
// (Sync reads, then writes, on the same files).
func queryAll[T any](ctx context.Context, db *sql.DB, query string, scan func(*sql.Rows) (T, error), args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// scanEntry reads an entry's ticket, gate and time (stored in Unix
// milliseconds), then any further columns into more.
func scanEntry(rows *sql.Rows, more ...any) (Entry, error) {
	var e Entry
	var at int64
	err := rows.Scan(append([]any{&e.TicketID, &e.GateID, &at}, more...)...)
	e.EnteredAt = time.UnixMilli(at).UTC()
	return e, err
}
