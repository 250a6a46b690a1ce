-- Disputes (chargebacks) and refunds made outside Encore (the provider's
-- dashboard), as the provider's webhooks report them. A dispute can come
-- months after the sale, long after the booking's workflow ended, so the
-- database, not the workflow, is the record: one row a dispute, moved only
-- forward (a closed dispute never reopens, so events arriving out of order
-- or twice converge on the same row).
CREATE TABLE payment_disputes (
    dispute_id       text PRIMARY KEY,
    reservation_id   uuid NOT NULL REFERENCES reservations (id),
    intent_id        text NOT NULL,
    charge_id        text NOT NULL DEFAULT '',
    status           text NOT NULL CHECK (status IN ('warning_needs_response', 'warning_under_review', 'warning_closed',
                                                     'needs_response', 'under_review', 'prevented', 'won', 'lost')),
    reason           text NOT NULL DEFAULT '',
    amount           bigint NOT NULL CHECK (amount >= 0),
    currency         char(3) NOT NULL,
    -- The provider's event that last moved the row, and when the provider
    -- created it: an older event never overwrites a newer one.
    last_event_id    text NOT NULL,
    last_event_at    timestamptz NOT NULL,
    opened_at        timestamptz NOT NULL DEFAULT now(),
    closed_at        timestamptz,
    -- When a lost dispute revoked the booking's tickets (once).
    revoked_at       timestamptz
);
CREATE INDEX payment_disputes_reservation ON payment_disputes (reservation_id, opened_at DESC);

-- Refunds of a booking's charge that Encore did not make, one row per
-- provider event (charge.refunded). amount_refunded is the charge's total
-- refunded after that refund; full says the charge was then refunded in
-- full, which ends the booking as REFUNDED. A partial one is recorded and
-- shown to support; the booking stays PAID.
CREATE TABLE outside_refunds (
    event_id         text PRIMARY KEY,
    reservation_id   uuid NOT NULL REFERENCES reservations (id),
    intent_id        text NOT NULL,
    charge_id        text NOT NULL,
    amount_refunded  bigint NOT NULL CHECK (amount_refunded >= 0),
    amount_captured  bigint NOT NULL CHECK (amount_captured >= 0),
    currency         char(3) NOT NULL,
    full_refund      boolean NOT NULL,
    -- Whether this event ended the booking (it was PAID and the charge was
    -- refunded in full).
    ended_booking    boolean NOT NULL DEFAULT false,
    received_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX outside_refunds_reservation ON outside_refunds (reservation_id, received_at);

-- The organiser's sales report: a paid booking whose dispute was lost is
-- charged back (its seats stay taken, its money is gone), no longer sold.
-- A booking refunded outside Encore is cancelled and refunded like one
-- Encore refunded, so it already reads as refunded.
CREATE OR REPLACE VIEW sales_items AS
    SELECT i.event_id, i.section_id, i.quantity, i.price_at_lock * i.quantity AS amount,
           CASE WHEN r.status = 'PAID' AND EXISTS (SELECT 1 FROM payment_disputes d
                                                   WHERE d.reservation_id = r.id AND d.status = 'lost') THEN 'charged_back'
                WHEN r.status = 'PAID' THEN 'sold'
                WHEN r.status = 'PENDING_PAYMENT' AND r.expires_at > now() THEN 'held'
                WHEN r.status = 'CANCELLED' AND p.status = 'REFUNDED' THEN 'refunded' END AS state
    FROM reservation_items i
    JOIN reservations r ON r.id = i.reservation_id
    LEFT JOIN payments p ON p.reservation_id = r.id;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'encore_reader') THEN
        GRANT SELECT ON sales_items TO encore_reader;
    END IF;
END $$;
