package store

import "context"

// SectionSales is one section's line of an event's sales report. Sold and
// Held count tickets (a general-admission hold of four is four); Revenue
// is what paid bookings' tickets cost, Refunded what cancelled, refunded
// bookings' tickets had cost, in minor units of the event's currency.
// ChargedBackTickets counts the tickets of paid bookings whose dispute was
// lost, ChargedBack what they had cost: their seats stay taken (not
// available), their money is gone (not revenue).
type SectionSales struct {
	SectionID string `json:"section_id"`
	Name      string `json:"name"`
	Capacity  int    `json:"capacity"`
	Sold      int    `json:"sold"`
	Held      int    `json:"held"`
	Blocked   int    `json:"blocked"`
	Available int    `json:"available"`
	Revenue   int64  `json:"revenue"`
	Refunded  int64  `json:"refunded"`

	ChargedBackTickets int   `json:"charged_back_tickets"`
	ChargedBack        int64 `json:"charged_back"`

	// ResaleSold counts the section's tickets fans resold to each other,
	// ResaleVolume what buyers paid for them and ResaleFees what the
	// platform kept. A resold seat stays counted once in Sold.
	ResaleSold   int   `json:"resale_sold"`
	ResaleVolume int64 `json:"resale_volume"`
	ResaleFees   int64 `json:"resale_fees"`
	// Fees are the service fees of the sold tickets, apart from Revenue.
	Fees int64 `json:"fees"`
}

// EventSales is the report's header: the event's organisation and currency.
type EventSales struct {
	EventID, OrgID, Currency string
	Sections                 []SectionSales
	// Tax is the tax inside (or on top of) the paid bookings' totals.
	Tax int64
}

// EventSales reads an event's sales per section from the read-only pool:
// ErrNotFound when the event is not of org (any organisation when org is
// empty). A hold counts as held until it is paid, released or past its
// expiry, whether or not the sweeper has ended it yet.
func (r *Reader) EventSales(ctx context.Context, eventID, org string) (EventSales, error) {
	out := EventSales{EventID: eventID}
	err := r.pool.QueryRow(ctx, `SELECT org_id, currency FROM events WHERE id = $1 AND ($2 = '' OR org_id = $2)`,
		eventID, org).Scan(&out.OrgID, &out.Currency)
	if err = orNotFound(err); err != nil {
		return EventSales{}, err
	}
	rows, err := r.pool.Query(ctx, `
		WITH items AS (SELECT section_id, quantity, amount, state, fee FROM sales_items WHERE event_id = $1)
		SELECT sec.id, sec.name, sec.capacity,
		       coalesce(sum(it.quantity) FILTER (WHERE it.state = 'sold'), 0),
		       coalesce(sum(it.quantity) FILTER (WHERE it.state = 'held'), 0),
		       (SELECT count(*) FROM seats st WHERE st.section_id = sec.id AND st.status = 'BLOCKED'),
		       coalesce(sum(it.amount) FILTER (WHERE it.state = 'sold'), 0),
		       coalesce(sum(it.amount) FILTER (WHERE it.state = 'refunded'), 0),
		       coalesce(sum(it.quantity) FILTER (WHERE it.state = 'charged_back'), 0),
		       coalesce(sum(it.amount) FILTER (WHERE it.state = 'charged_back'), 0),
		       coalesce(min(rs.sold), 0), coalesce(min(rs.volume), 0)::bigint, coalesce(min(rs.fees), 0)::bigint,
		       coalesce(sum(it.fee) FILTER (WHERE it.state = 'sold'), 0)
		FROM sections sec LEFT JOIN items it ON it.section_id = sec.id
		LEFT JOIN resale_sales rs ON rs.event_id = $1 AND rs.section_id = sec.id
		WHERE sec.event_id = $1
		GROUP BY sec.id, sec.name, sec.capacity, sec.sort_order
		ORDER BY sec.sort_order, sec.id`, eventID)
	if err != nil {
		return EventSales{}, err
	}
	defer rows.Close()
	for rows.Next() {
		var s SectionSales
		if err := rows.Scan(&s.SectionID, &s.Name, &s.Capacity, &s.Sold, &s.Held, &s.Blocked, &s.Revenue, &s.Refunded,
			&s.ChargedBackTickets, &s.ChargedBack, &s.ResaleSold, &s.ResaleVolume, &s.ResaleFees, &s.Fees); err != nil {
			return EventSales{}, err
		}
		s.Available = max(s.Capacity-s.Sold-s.Held-s.Blocked-s.ChargedBackTickets, 0)
		out.Sections = append(out.Sections, s)
	}
	if err := rows.Err(); err != nil {
		return EventSales{}, err
	}
	err = r.pool.QueryRow(ctx, `SELECT coalesce((SELECT tax FROM sales_tax WHERE event_id = $1), 0)::bigint`, eventID).Scan(&out.Tax)
	return out, err
}
