-- Ticket transfers: a fan hands a ticket to someone else by email. On
-- acceptance the old ticket becomes TRANSFERRED (the gate refuses it) and
-- the recipient gets a new ticket for the same place with a new ID and
-- secret, in one transaction: at every moment one valid holder. The new
-- ticket keeps the booking (reservation_id) it was bought in; holder_seq
-- counts the hands it has passed through, so the saga's idempotent issue
-- (holder_seq 0) never collides with a transferred ticket.
ALTER TABLE tickets DROP CONSTRAINT tickets_status_check;
ALTER TABLE tickets ADD CONSTRAINT tickets_status_check CHECK (status IN ('VALID', 'REVOKED', 'TRANSFERRED'));
ALTER TABLE tickets
    ADD COLUMN holder_seq      int NOT NULL DEFAULT 0 CHECK (holder_seq >= 0),
    ADD COLUMN transferred_at  timestamptz;
ALTER TABLE tickets DROP CONSTRAINT tickets_reservation_id_section_id_seat_id_unit_key;
ALTER TABLE tickets ADD CONSTRAINT tickets_issue_key UNIQUE NULLS NOT DISTINCT (reservation_id, section_id, seat_id, unit, holder_seq);
-- A standing place, like a seat (tickets_one_valid_per_seat), has one
-- valid ticket at a time.
CREATE UNIQUE INDEX tickets_one_valid_per_place ON tickets (reservation_id, section_id, unit)
    WHERE status = 'VALID' AND seat_id IS NULL;

CREATE TABLE ticket_transfers (
    id             uuid PRIMARY KEY,
    ticket_id      text NOT NULL REFERENCES tickets (id),
    event_id       text NOT NULL REFERENCES events (id),
    from_user      text NOT NULL,
    from_email     text NOT NULL DEFAULT '', -- the sender's, to tell them of the acceptance
    to_email       text NOT NULL CHECK (length(to_email) BETWEEN 3 AND 254),
    status         text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'ACCEPTED', 'CANCELLED', 'EXPIRED')),
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL,
    ended_at       timestamptz,
    to_user        text,
    new_ticket_id  text REFERENCES tickets (id),
    CHECK ((status = 'ACCEPTED') = (new_ticket_id IS NOT NULL AND to_user IS NOT NULL)),
    CHECK ((status = 'PENDING') = (ended_at IS NULL))
);
-- One offer of a ticket at a time.
CREATE UNIQUE INDEX ticket_transfers_one_pending ON ticket_transfers (ticket_id) WHERE status = 'PENDING';
CREATE INDEX ticket_transfers_from ON ticket_transfers (from_user, created_at DESC);
CREATE INDEX ticket_transfers_to ON ticket_transfers (lower(to_email), created_at DESC);
