-- Fan-to-fan resale under the organiser's cap. A fan lists a valid ticket
-- at a price up to the event's cap (resale_max_price_bp of what the fan
-- paid for it); the ticket becomes LISTED, which no gate admits, until the
-- listing is withdrawn, expires (the sweeper gives it back VALID) or is
-- sold. A buyer holds listings like seats: reservations.id in
-- resale_listings.reservation_id while the hold lives (one hold per
-- listing: the hold locks the listing row and refuses one held by a live
-- pending reservation). On PAID the listing is SOLD, the old ticket
-- TRANSFERRED and the buyer holds a new ticket in their own booking; the
-- seller is paid the price less the fee (a partial refund of the payment
-- they bought the ticket with, up to what they paid; the rest is owed).
ALTER TABLE tickets DROP CONSTRAINT tickets_status_check;
ALTER TABLE tickets ADD CONSTRAINT tickets_status_check CHECK (status IN ('VALID', 'REVOKED', 'TRANSFERRED', 'LISTED'));
ALTER TABLE tickets ADD COLUMN listed_at timestamptz;

CREATE TABLE resale_listings (
    id              uuid PRIMARY KEY,
    event_id        text NOT NULL REFERENCES events (id),
    ticket_id       text NOT NULL REFERENCES tickets (id),
    section_id      text NOT NULL REFERENCES sections (id),
    seat_id         text REFERENCES seats (id),
    seller_user     text NOT NULL,
    seller_email    text NOT NULL DEFAULT '',
    currency        char(3) NOT NULL,
    face_value      bigint NOT NULL CHECK (face_value >= 0), -- what the seller paid for the ticket
    price           bigint NOT NULL CHECK (price > 0),
    fee             bigint NOT NULL CHECK (fee >= 0 AND fee <= price),
    status          text NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'SOLD', 'WITHDRAWN', 'EXPIRED')),
    created_at      timestamptz NOT NULL DEFAULT now(),
    closes_at       timestamptz NOT NULL,
    ended_at        timestamptz,
    -- The buyer's reservation: while ACTIVE, the hold that has it (if that
    -- hold is still pending and unexpired); once SOLD, the booking.
    reservation_id  uuid REFERENCES reservations (id),
    -- A fan on the event's waitlist has the listing first until offered_until.
    offered_to      text,
    offered_until   timestamptz,
    new_ticket_id   text REFERENCES tickets (id),
    -- The seller's payout: price - fee, refunded to their card up to what
    -- they paid (payout_refunded) and owed beyond (payout_owed); NULL until paid.
    payout_status   text CHECK (payout_status IN ('PAID', 'OWED')),
    payout_refunded bigint NOT NULL DEFAULT 0 CHECK (payout_refunded >= 0),
    payout_owed     bigint NOT NULL DEFAULT 0 CHECK (payout_owed >= 0),
    payout_refund_id text,
    paid_out_at     timestamptz,
    CHECK ((status = 'ACTIVE') = (ended_at IS NULL)),
    CHECK (status <> 'SOLD' OR reservation_id IS NOT NULL),
    CHECK (payout_status IS NULL OR payout_refunded + payout_owed = price - fee)
);
-- One open listing per ticket.
CREATE UNIQUE INDEX resale_listings_one_active ON resale_listings (ticket_id) WHERE status = 'ACTIVE';
CREATE INDEX resale_listings_event ON resale_listings (event_id, price) WHERE status = 'ACTIVE';
CREATE INDEX resale_listings_seller ON resale_listings (seller_user, created_at DESC);
CREATE INDEX resale_listings_reservation ON resale_listings (reservation_id) WHERE reservation_id IS NOT NULL;
CREATE INDEX resale_listings_closing ON resale_listings (closes_at) WHERE status = 'ACTIVE';

-- A buyer's line for a listing: not live (the seller's item keeps the
-- seat's one live owner and the general-admission count), named by listing.
ALTER TABLE reservation_items ADD COLUMN listing_id uuid REFERENCES resale_listings (id);
CREATE INDEX reservation_items_listing ON reservation_items (listing_id) WHERE listing_id IS NOT NULL;

-- A listed ticket still holds its place: one valid or listed ticket per
-- seat and per standing place.
DROP INDEX tickets_one_valid_per_seat;
CREATE UNIQUE INDEX tickets_one_valid_per_seat ON tickets (seat_id) WHERE status IN ('VALID', 'LISTED') AND seat_id IS NOT NULL;
DROP INDEX tickets_one_valid_per_place;
CREATE UNIQUE INDEX tickets_one_valid_per_place ON tickets (reservation_id, section_id, unit)
    WHERE status IN ('VALID', 'LISTED') AND seat_id IS NULL;
