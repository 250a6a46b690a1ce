package store

import (
	"context"
	"fmt"
	"github.com/jackc/pgx/v5"
	"time"
)

// AuditReport counts violations of the inventory rules. Every count must be
// zero; encore audit exits non-zero otherwise.
type AuditReport struct {
	// SeatsWithManyOwners: seats with more than one live reservation item, or
	// whose seats row names a reservation other than the live item's.
	SeatsWithManyOwners int64 `json:"seats_with_many_owners"`
	// SoldWithoutPaid: SOLD seats whose reservation is not PAID.
	SoldWithoutPaid int64 `json:"sold_without_paid"`
	// HeldPastExpiry: HELD seats whose hold expired longer ago than the
	// sweeper's allowed lag.
	HeldPastExpiry int64 `json:"held_past_expiry"`
	// GeneralOverCount: general-admission sections whose taken count differs
	// from their live items.
	GeneralOverCount int64 `json:"general_miscounted"`
	// SeatedMiscounted: seated sections whose taken count (the shards of
	// section_taken, which surge pricing reads) differs from their seats
	// that name a reservation.
	SeatedMiscounted int64 `json:"seated_miscounted"`
	// RoomNightsOverLimit: room-nights held and sold past their allotment
	// plus overbooking limit.
	RoomNightsOverLimit int64 `json:"room_nights_over_limit"`
	// RoomNightsMiscounted: room-nights whose held or sold counter differs
	// from the live nights of pending or paid reservations.
	RoomNightsMiscounted int64 `json:"room_nights_miscounted"`
	// TicketsBeyondSale: bookings with more tickets, or more revoked
	// tickets, than their sale issued. A sale issues one ticket per seat or
	// general-admission unit of a booking that was sold (PAID, or its
	// payment captured or refunded); a booking never sold issues none, so
	// any ticket of it (the 501st revoked ticket of an event's
	// cancellation) counts here.
	TicketsBeyondSale int64 `json:"tickets_beyond_sale"`
	// TicketsRevokedTwice: tickets whose one revocation was rewritten. A
	// ticket records one revocation (status REVOKED and revoked_at) and the
	// revoke statements touch only tickets that carry none, so a second
	// revocation shows as a REVOKED ticket without its instant, or a VALID
	// one that carries one (revoked, then made valid again: revocable twice).
	TicketsRevokedTwice int64 `json:"tickets_revoked_twice"`
	// ListingsSoldTwice: resale listings that more than one paid or live
	// pending reservation bought or holds (two buyers on one listing).
	ListingsSoldTwice int64 `json:"listings_sold_twice"`
	// ResaleMoneyUnbalanced: sold listings whose buyer's line differs from
	// the listing's price, or whose seller credit (refunded plus owed) plus
	// fee differs from it: per listing, the buyer's charge is the seller's
	// credit plus the fee.
	ResaleMoneyUnbalanced int64 `json:"resale_money_unbalanced"`
	// PlacesWithTwoHolders: sold listings whose seller's ticket is still
	// usable, and seats with more than one valid or listed ticket.
	PlacesWithTwoHolders int64 `json:"places_with_two_holders"`
}

// Violations is the total count.
func (r AuditReport) Violations() int64 {
	return r.SeatsWithManyOwners + r.SoldWithoutPaid + r.HeldPastExpiry + r.GeneralOverCount + r.SeatedMiscounted +
		r.RoomNightsOverLimit + r.RoomNightsMiscounted + r.TicketsBeyondSale + r.TicketsRevokedTwice +
		r.ListingsSoldTwice + r.ResaleMoneyUnbalanced + r.PlacesWithTwoHolders
}

func (r AuditReport) String() string {
	return fmt.Sprintf("seats with more than one live owner: %d; SOLD seats without a PAID reservation: %d; HELD seats past expiry beyond sweeper lag: %d; general-admission sections miscounted: %d; seated sections miscounted: %d; room-nights past allotment plus limit: %d; room-nights miscounted: %d; bookings with more tickets or revoked tickets than their sale issued: %d; tickets revoked twice: %d; listings sold twice: %d; resale listings with unbalanced money: %d; places with two holders: %d",
		r.SeatsWithManyOwners, r.SoldWithoutPaid, r.HeldPastExpiry, r.GeneralOverCount, r.SeatedMiscounted, r.RoomNightsOverLimit, r.RoomNightsMiscounted,
		r.TicketsBeyondSale, r.TicketsRevokedTwice, r.ListingsSoldTwice, r.ResaleMoneyUnbalanced, r.PlacesWithTwoHolders)
}

// Audit runs the invariant queries over the whole database (or one event
// when eventID is not empty) in one consistent snapshot: the inventory's
// rules, and the tickets' (no booking has more tickets, or more revoked
// tickets, than its sale issued; no ticket is revoked twice). encore audit
// and the nightly AuditInventory workflow both run it.
func (s *Holds) Audit(ctx context.Context, eventID string, sweeperLag time.Duration) (AuditReport, error) {
	var r AuditReport
	err := s.pool.QueryRow(ctx, `
		WITH live AS (
			SELECT i.seat_id, i.reservation_id FROM reservation_items i
			JOIN reservations r ON r.id = i.reservation_id
			WHERE i.seat_id IS NOT NULL AND i.listing_id IS NULL AND r.status IN ('PENDING_PAYMENT', 'PAID')
			  AND ($1 = '' OR i.event_id = $1)
		)
		SELECT
		  (SELECT count(*) FROM (
		     SELECT seat_id FROM live GROUP BY seat_id HAVING count(*) > 1
		     UNION
		     SELECT s.id FROM seats s JOIN live ON live.seat_id = s.id
		     WHERE s.reservation_id IS DISTINCT FROM live.reservation_id
		   ) x),
		  (SELECT count(*) FROM seats s LEFT JOIN reservations r ON r.id = s.reservation_id
		    WHERE s.status = 'SOLD' AND r.status IS DISTINCT FROM 'PAID' AND ($1 = '' OR s.event_id = $1)),
		  (SELECT count(*) FROM seats s JOIN reservations r ON r.id = s.reservation_id
		    WHERE s.status = 'HELD' AND r.expires_at < now() - $2::interval AND ($1 = '' OR s.event_id = $1)),
		  (SELECT count(*) FROM sections sec
		    WHERE sec.kind = 'general' AND ($1 = '' OR sec.event_id = $1) AND sec.ga_taken <> (
		      SELECT coalesce(sum(i.quantity), 0) FROM reservation_items i
		      JOIN reservations r ON r.id = i.reservation_id
		      WHERE i.section_id = sec.id AND i.seat_id IS NULL AND i.live)),
		  (SELECT count(*) FROM sections sec
		    WHERE sec.kind <> 'general' AND ($1 = '' OR sec.event_id = $1)
		      AND (SELECT coalesce(sum(t.taken), 0) FROM section_taken t WHERE t.section_id = sec.id)
		       <> (SELECT count(*) FROM seats s WHERE s.section_id = sec.id AND s.reservation_id IS NOT NULL)),
		  (SELECT count(*) FROM (
		     SELECT t.reservation_id, count(*) FILTER (WHERE t.status <> 'TRANSFERRED') AS issued,
		            count(*) FILTER (WHERE t.status = 'REVOKED') AS revoked
		     FROM tickets t WHERE ($1 = '' OR t.event_id = $1) GROUP BY t.reservation_id) k
		   JOIN reservations r ON r.id = k.reservation_id
		   LEFT JOIN payments p ON p.reservation_id = r.id
		   WHERE greatest(k.issued, k.revoked) > CASE
		     WHEN r.status = 'PAID' OR p.status IN ('CAPTURED', 'REFUNDED')
		     THEN (SELECT coalesce(sum(i.quantity), 0) FROM reservation_items i WHERE i.reservation_id = r.id)
		     ELSE 0 END),
		  (SELECT count(*) FROM tickets t WHERE ($1 = '' OR t.event_id = $1) AND (
		     (t.status = 'REVOKED' AND t.revoked_at IS NULL) OR (t.status = 'VALID' AND t.revoked_at IS NOT NULL)))`,
		eventID, sweeperLag.String()).Scan(&r.SeatsWithManyOwners, &r.SoldWithoutPaid, &r.HeldPastExpiry, &r.GeneralOverCount,
		&r.SeatedMiscounted, &r.TicketsBeyondSale, &r.TicketsRevokedTwice)
	if err != nil {
		return r, err
	}
	if err := s.auditResale(ctx, eventID, &r); err != nil {
		return r, err
	}
	// Room-nights belong to no event: audited whole every time.
	return r, s.st.Hotels.auditRoomNights(ctx, &r)
}

// Settled is what a sale left unfinished once it has drained: the checks
// a chaos rehearsal adds to the audit.
type Settled struct {
	// BookingsMissingTickets: paid bookings with fewer tickets issued than
	// their places (a sale confirmed whose issue step never ran). A ticket
	// moved on since (TRANSFERRED by a transfer or a resale) still counts
	// for the booking that issued it.
	BookingsMissingTickets int64 `json:"bookings_missing_tickets"`
	// StuckBookings: holds still pending well past their expiry, and paid
	// bookings still without tickets past grace: sagas that stopped.
	StuckBookings int64 `json:"stuck_bookings"`
	// LostWebhooks: provider events stored but never handed to their
	// booking past grace.
	LostWebhooks int64 `json:"lost_webhooks"`
	// LostWebhookEvents names up to ten of them ("<event> <type> <intent>
	// received <time>"), for whoever looks into why.
	LostWebhookEvents []string `json:"lost_webhook_events,omitempty"`
	// UnsettledBookings names up to ten paid bookings missing tickets and
	// stuck holds ("<booking> <status> payment <status> places <n> tickets
	// <n> ended <time>"): the workflow to open in the Temporal UI is
	// booking-<booking>.
	UnsettledBookings []string `json:"unsettled_bookings,omitempty"`
}

// lostWebhook is a provider event w of event $1 (or of no payment)
// received over $2 ago and never handed to its booking.
const lostWebhook = `w.signalled_at IS NULL AND w.received_at < now() - $2::interval
	AND (w.intent_id IS NULL OR EXISTS (SELECT 1 FROM payments p JOIN reservations r ON r.id = p.reservation_id
	       WHERE p.intent_id = w.intent_id AND r.event_id = $1))`

// Settle reads eventID's unfinished business older than grace.
func (s *Holds) Settle(ctx context.Context, eventID string, grace time.Duration) (Settled, error) {
	var r Settled
	err := s.pool.QueryRow(ctx, `WITH paid AS (
			SELECT r.id, r.ended_at,
			       (SELECT coalesce(sum(i.quantity), 0) FROM reservation_items i WHERE i.reservation_id = r.id) AS places,
			       (SELECT count(*) FROM tickets t WHERE t.reservation_id = r.id) AS tickets
			FROM reservations r WHERE r.event_id = $1 AND r.status = 'PAID')
		SELECT
		  (SELECT count(*) FROM paid WHERE tickets < places),
		  (SELECT count(*) FROM reservations r WHERE r.event_id = $1 AND r.status = 'PENDING_PAYMENT'
		     AND r.expires_at < now() - $2::interval)
		  + (SELECT count(*) FROM paid WHERE tickets = 0 AND places > 0 AND ended_at < now() - $2::interval),
		  (SELECT count(*) FROM webhook_events w WHERE `+lostWebhook+`)`, eventID, grace.String()).
		Scan(&r.BookingsMissingTickets, &r.StuckBookings, &r.LostWebhooks)
	if err != nil {
		return r, err
	}
	if r.BookingsMissingTickets > 0 || r.StuckBookings > 0 {
		rows, err := s.pool.Query(ctx, `SELECT concat_ws(' ', r.id, r.status, 'payment', coalesce(p.status, '-'),
				'places', (SELECT coalesce(sum(i.quantity), 0) FROM reservation_items i WHERE i.reservation_id = r.id),
				'tickets', (SELECT count(*) FROM tickets t WHERE t.reservation_id = r.id),
				'expires', r.expires_at, 'ended', coalesce(r.ended_at::text, '-'))
			FROM reservations r LEFT JOIN payments p ON p.reservation_id = r.id
			WHERE r.event_id = $1 AND (
			  (r.status = 'PAID' AND (SELECT count(*) FROM tickets t WHERE t.reservation_id = r.id)
			     < (SELECT coalesce(sum(i.quantity), 0) FROM reservation_items i WHERE i.reservation_id = r.id))
			  OR (r.status = 'PENDING_PAYMENT' AND r.expires_at < now() - $2::interval))
			ORDER BY r.created_at LIMIT 10`, eventID, grace.String())
		if err != nil {
			return r, err
		}
		if r.UnsettledBookings, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return r, err
		}
	}
	if r.LostWebhooks == 0 {
		return r, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT concat_ws(' ', w.event_id, w.type, coalesce(w.intent_id, '-'), 'received', w.received_at)
		FROM webhook_events w WHERE `+lostWebhook+`
		ORDER BY w.received_at LIMIT 10`, eventID, grace.String())
	if err != nil {
		return r, err
	}
	r.LostWebhookEvents, err = pgx.CollectRows(rows, pgx.RowTo[string])
	return r, err
}
