package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/encore-tickets/encore/pricing"
	"github.com/encore-tickets/encore/vocab"
)

// OrgSettings are an organisation's legal and tax data: what its invoices
// say and how its prices are taxed. An organisation that never saved any
// has the defaults (no tax, prices include it, prefix INV).
type OrgSettings struct {
	OrgID            string `json:"org_id"`
	LegalName        string `json:"legal_name"`
	Address          string `json:"address"`
	VATID            string `json:"vat_id"`
	TaxRateBp        int    `json:"tax_rate_bp"`
	PricesIncludeTax bool   `json:"prices_include_tax"`
	InvoicePrefix    string `json:"invoice_prefix"`
}

// DefaultOrgSettings are an organisation's before it saves its own.
func DefaultOrgSettings(org string) OrgSettings {
	return OrgSettings{OrgID: org, PricesIncludeTax: true, InvoicePrefix: "INV"}
}

// OrgSettings reads org's settings (the defaults when it has none).
func (s *Orgs) OrgSettings(ctx context.Context, org string) (OrgSettings, error) {
	o := DefaultOrgSettings(org)
	err := s.pool.QueryRow(ctx, `SELECT legal_name, address, vat_id, tax_rate_bp, prices_include_tax, invoice_prefix
		FROM organisations WHERE id = $1`, org).Scan(&o.LegalName, &o.Address, &o.VATID, &o.TaxRateBp, &o.PricesIncludeTax, &o.InvoicePrefix)
	if errors.Is(err, pgx.ErrNoRows) {
		return o, nil
	}
	return o, err
}

// SaveOrgSettings writes o. A tax change applies to holds taken from now
// on: a hold's tax is frozen when it is taken.
func (s *Orgs) SaveOrgSettings(ctx context.Context, o OrgSettings) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO organisations (id, legal_name, address, vat_id, tax_rate_bp, prices_include_tax, invoice_prefix)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (id) DO UPDATE SET legal_name = EXCLUDED.legal_name, address = EXCLUDED.address, vat_id = EXCLUDED.vat_id,
			tax_rate_bp = EXCLUDED.tax_rate_bp, prices_include_tax = EXCLUDED.prices_include_tax,
			invoice_prefix = EXCLUDED.invoice_prefix, updated_at = now()`,
		o.OrgID, o.LegalName, o.Address, o.VATID, o.TaxRateBp, o.PricesIncludeTax, o.InvoicePrefix)
	return inputError(err)
}

// InvoiceKind is an invoice or the credit note of a refund.
type InvoiceKind string

// Every invoice kind (mirrors the CHECK on invoices.kind).
const (
	KindInvoice    InvoiceKind = "INVOICE"
	KindCreditNote InvoiceKind = "CREDIT_NOTE"
)

// InvoiceLine is one line of an invoice: a ticket type's seats of one
// section at one price, or a refund.
type InvoiceLine struct {
	Description string `json:"description"`
	Quantity    int    `json:"quantity"`
	UnitPrice   int64  `json:"unit_price"`
	Fee         int64  `json:"fee"` // the line's service fees, apart from its price
	Amount      int64  `json:"amount"`
}

// Invoice is an issued invoice or credit note. Amounts are minor units of
// Currency; a credit note's are negative. Total = Net + Tax; Fees are the
// service fees inside Total. Seller is the organisation's legal data as it
// was at issue.
type Invoice struct {
	Number        string
	Kind          InvoiceKind
	ReservationID uuid.UUID
	OrgID         string
	IssuedAt      time.Time
	Currency      string
	Net, Tax      int64
	Fees, Total   int64
	TaxRateBp     int
	Seller        OrgSettings
	Lines         []InvoiceLine
	// Buyer is the email the booking was made with.
	Buyer string
	// EventTitle names what was bought.
	EventTitle string
}

// ErrNoInvoice: the booking has no invoice of that kind, or cannot have
// one (never paid, a hotel-only stay, a resale between fans).
var ErrNoInvoice = errors.New("store: no invoice for this booking")

const invoiceColumns = `i.number, i.kind, i.reservation_id, i.org_id, i.issued_at, i.currency, i.net, i.tax, i.fees, i.total, i.tax_rate_bp,
	i.seller, i.lines, coalesce(r.fan_email, ''), coalesce(e.title, '')`

func scanInvoice(row pgx.CollectableRow) (Invoice, error) {
	var v Invoice
	err := row.Scan(&v.Number, &v.Kind, &v.ReservationID, &v.OrgID, &v.IssuedAt, &v.Currency, &v.Net, &v.Tax, &v.Fees, &v.Total,
		&v.TaxRateBp, &v.Seller, &v.Lines, &v.Buyer, &v.EventTitle)
	return v, err
}

// InvoiceParties are who may read booking id's invoices: the fan who
// booked (user) and the organisation that sold (org, "" for a hotel-only
// stay).
func (s *Bookings) InvoiceParties(ctx context.Context, id uuid.UUID) (user, org string, err error) {
	err = s.pool.QueryRow(ctx, `SELECT r.user_id, coalesce(e.org_id, '') FROM reservations r LEFT JOIN events e ON e.id = r.event_id
		WHERE r.id = $1`, id).Scan(&user, &org)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", ErrNotFound
	}
	return user, org, err
}

// Invoice reads booking id's invoice of kind.
func (s *Bookings) Invoice(ctx context.Context, id uuid.UUID, kind InvoiceKind) (Invoice, error) {
	return queryOne(ctx, s.pool, ErrNoInvoice, scanInvoice, `SELECT `+invoiceColumns+` FROM invoices i
		JOIN reservations r ON r.id = i.reservation_id LEFT JOIN events e ON e.id = r.event_id
		WHERE i.reservation_id = $1 AND i.kind = $2`, id, string(kind))
}

// IssueInvoice issues the paid booking id's invoice once (a second call
// returns the first). Its number is the organisation's next for the year
// (<prefix>-<year>-<seq, six digits>), taken under the counter's row lock
// in the transaction that writes the invoice: a number is used once, and
// an invoice that is not written gives its number back, so the numbers
// have no gaps; a booking never paid takes none. Fan-to-fan resales and
// hotel-only stays have no organiser's invoice (ErrNoInvoice).
func (s *Bookings) IssueInvoice(ctx context.Context, id uuid.UUID) (Invoice, error) {
	for range 3 {
		err := s.tx(ctx, func(tx pgx.Tx) error { return issueInvoiceTx(ctx, tx, id) })
		if code, constraint := pgCode(err); code == pgUniqueViolation && constraint == "invoices_reservation_id_kind_key" {
			continue // issued by a racing call: read it
		}
		if err != nil {
			return Invoice{}, err
		}
		return s.Invoice(ctx, id, KindInvoice)
	}
	return s.Invoice(ctx, id, KindInvoice)
}

// issueInvoiceTx numbers and writes a paid booking's invoice in tx, unless
// it has one (nil) or gets none (ErrNoInvoice: no organisation, a resale,
// not paid). Two racing calls meet on invoices_reservation_id_kind_key.
func issueInvoiceTx(ctx context.Context, tx pgx.Tx, id uuid.UUID) error {
	var org, currency, status string
	var tax, fees, total int64
	var rate int
	var resale bool
	err := tx.QueryRow(ctx, `SELECT coalesce(e.org_id, ''), r.currency, r.status, r.tax, r.fees, r.total, r.tax_rate_bp,
			EXISTS (SELECT 1 FROM reservation_items i WHERE i.reservation_id = r.id AND i.listing_id IS NOT NULL)
		FROM reservations r LEFT JOIN events e ON e.id = r.event_id WHERE r.id = $1`, id).
		Scan(&org, &currency, &status, &tax, &fees, &total, &rate, &resale)
	if err = orNotFound(err); err != nil {
		return err
	}
	if org == "" || resale || status != string(vocab.ReservationPaid) {
		return ErrNoInvoice
	}
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM invoices WHERE reservation_id = $1 AND kind = 'INVOICE')`, id).Scan(&exists); err != nil || exists {
		return err
	}
	lines, err := invoiceLines(ctx, tx, id)
	if err != nil {
		return err
	}
	// Net is the total without its tax (fees included: they are taxed like
	// the tickets).
	return insertInvoice(ctx, tx, id, org, KindInvoice, currency, total-tax, tax, fees, total, rate, lines)
}

// IssueCreditNote issues the credit note of a refund of refunded (minor
// units) on booking id, once: its own number from the same sequence, the
// amounts negative, the tax the invoice's share. A booking without an
// invoice gets none (ErrNoInvoice).
func (s *Bookings) IssueCreditNote(ctx context.Context, id uuid.UUID, refunded int64) (Invoice, error) {
	for range 3 {
		err := s.tx(ctx, func(tx pgx.Tx) error {
			var org, number, currency string
			var rate int
			var total, fees int64
			err := tx.QueryRow(ctx, `SELECT org_id, number, currency, tax_rate_bp, total, fees FROM invoices
				WHERE reservation_id = $1 AND kind = 'INVOICE'`, id).Scan(&org, &number, &currency, &rate, &total, &fees)
			if errors.Is(err, pgx.ErrNoRows) {
				return ErrNoInvoice
			}
			if err != nil {
				return err
			}
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM invoices WHERE reservation_id = $1 AND kind = 'CREDIT_NOTE')`, id).Scan(&exists); err != nil || exists {
				return err
			}
			amount := min(refunded, total)
			if amount <= 0 {
				amount = total
			}
			tax := pricing.Tax(amount, rate, true)
			credFees := fees
			if amount < total {
				credFees = 0 // a partial refund keeps the fees
			}
			lines := []InvoiceLine{{Description: "Refund of invoice " + number, Quantity: 1, UnitPrice: -amount, Amount: -amount}}
			return insertInvoice(ctx, tx, id, org, KindCreditNote, currency, -(amount - tax), -tax, -credFees, -amount, rate, lines)
		})
		if code, constraint := pgCode(err); code == pgUniqueViolation && constraint == "invoices_reservation_id_kind_key" {
			continue
		}
		if err != nil {
			return Invoice{}, err
		}
		return s.Invoice(ctx, id, KindCreditNote)
	}
	return s.Invoice(ctx, id, KindCreditNote)
}

// insertInvoice takes the organisation's next number for the year and
// writes the invoice with the organisation's legal data as it is now.
func insertInvoice(ctx context.Context, tx pgx.Tx, id uuid.UUID, org string, kind InvoiceKind, currency string,
	net, tax, fees, total int64, rate int, lines []InvoiceLine) error {
	seller := DefaultOrgSettings(org)
	err := tx.QueryRow(ctx, `SELECT legal_name, address, vat_id, tax_rate_bp, prices_include_tax, invoice_prefix
		FROM organisations WHERE id = $1`, org).Scan(&seller.LegalName, &seller.Address, &seller.VATID, &seller.TaxRateBp,
		&seller.PricesIncludeTax, &seller.InvoicePrefix)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	// The number is the series' highest plus one, read under a transaction
	// lock on the organisation's year: numbers are taken one at a time, and
	// a rolled-back invoice gives its number back (no gaps). The lock
	// writes nothing, where a counter row was one more row write an invoice.
	// The read is a statement of its own, after the lock: its snapshot then
	// sees the invoice of whoever held the lock before.
	var year int
	var seq int64
	b := &pgx.Batch{}
	b.Queue(`SELECT pg_advisory_xact_lock(hashtextextended('invoice:' || $1 || ':' || extract(year FROM now() AT TIME ZONE 'UTC')::int, 0))`, org)
	b.Queue(`SELECT y, coalesce((SELECT max(seq) FROM invoices WHERE org_id = $1 AND year = y), 0) + 1
		FROM (SELECT extract(year FROM now() AT TIME ZONE 'UTC')::int) AS t (y)`, org).QueryRow(func(row pgx.Row) error {
		return row.Scan(&year, &seq)
	})
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	sellerJSON, err := json.Marshal(seller)
	if err != nil {
		return err
	}
	linesJSON, err := json.Marshal(lines)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO invoices (org_id, year, seq, number, kind, reservation_id, currency, net, tax, fees, total,
			tax_rate_bp, seller, lines) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		org, year, seq, fmt.Sprintf("%s-%d-%06d", seller.InvoicePrefix, year, seq), string(kind), id, currency, net, tax, fees, total,
		rate, sellerJSON, linesJSON)
	return err
}

// invoiceLines groups the booking's lines by section, ticket type and
// price, as an invoice lists them.
func invoiceLines(ctx context.Context, tx pgx.Tx, id uuid.UUID) ([]InvoiceLine, error) {
	rows, err := tx.Query(ctx, `SELECT sec.name || coalesce(' · ' || t.name, ''), sum(i.quantity), i.price_at_lock, sum(i.fee)
		FROM reservation_items i JOIN sections sec ON sec.id = i.section_id
		LEFT JOIN ticket_types t ON t.event_id = i.event_id AND t.id = i.ticket_type
		WHERE i.reservation_id = $1 GROUP BY 1, i.price_at_lock ORDER BY 1, i.price_at_lock`, id)
	if err != nil {
		return nil, err
	}
	lines, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (InvoiceLine, error) {
		var l InvoiceLine
		err := row.Scan(&l.Description, &l.Quantity, &l.UnitPrice, &l.Fee)
		l.Amount = l.UnitPrice * int64(l.Quantity)
		return l, err
	})
	if err != nil {
		return nil, err
	}
	rows, err = tx.Query(ctx, `SELECT p.name || ', ' || n.room_type || ', night of ' || to_char(n.night, 'YYYY-MM-DD'), n.rooms, n.price
		FROM reservation_nights n JOIN properties p ON p.id = n.property_id
		WHERE n.reservation_id = $1 AND n.price > 0 ORDER BY n.stay, n.night`, id)
	if err != nil {
		return nil, err
	}
	nights, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (InvoiceLine, error) {
		var l InvoiceLine
		err := row.Scan(&l.Description, &l.Quantity, &l.UnitPrice)
		l.Amount = l.UnitPrice * int64(l.Quantity)
		return l, err
	})
	return append(lines, nights...), err
}
