-- The booking saga's records: payments, provider webhooks, fraud decisions,
-- tickets and notifications. The workflow drives them; these constraints make
-- every retry harmless.

-- One payment per booking (the booking ID is the hold ID). The provider's
-- intent carries the step key as its idempotency key.
CREATE TABLE payments (
    reservation_id  uuid PRIMARY KEY REFERENCES reservations (id),
    intent_id       text UNIQUE,
    amount          bigint NOT NULL CHECK (amount >= 0),
    currency        char(3) NOT NULL,
    status          text NOT NULL CHECK (status IN ('PENDING', 'REQUIRES_ACTION', 'AUTHORISED', 'CAPTURED',
                                                    'VOIDED', 'REFUNDED', 'FAILED')),
    attempts        int NOT NULL DEFAULT 0,
    refund_id       text UNIQUE,
    flagged         text,        -- why the payment was flagged for staff (amount mismatch, ...)
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- Every verified provider event, stored before it is acknowledged. The same
-- ID with other content is refused.
CREATE TABLE webhook_events (
    provider     text NOT NULL,
    event_id     text NOT NULL,
    fingerprint  bytea NOT NULL,
    type         text NOT NULL,
    intent_id    text,
    payload      jsonb NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now(),
    signalled_at timestamptz,
    PRIMARY KEY (provider, event_id)
);
CREATE INDEX webhook_events_unsignalled ON webhook_events (received_at) WHERE signalled_at IS NULL;

CREATE TABLE fraud_decisions (
    reservation_id  uuid NOT NULL REFERENCES reservations (id),
    attempt         int NOT NULL,
    decision        text NOT NULL CHECK (decision IN ('allow', 'review', 'deny')),
    score           int NOT NULL,
    reasons         jsonb NOT NULL,
    decided_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (reservation_id, attempt)
);

-- One valid ticket per seat; one ticket per unit of a booking.
CREATE TABLE tickets (
    id              text PRIMARY KEY,
    reservation_id  uuid NOT NULL REFERENCES reservations (id),
    event_id        text NOT NULL REFERENCES events (id),
    section_id      text NOT NULL REFERENCES sections (id),
    seat_id         text REFERENCES seats (id),
    unit            int NOT NULL DEFAULT 1,
    user_id         text NOT NULL,
    -- The ticket's own QR secret, sealed with AES-GCM under a configured key.
    secret_sealed   bytea NOT NULL,
    status          text NOT NULL DEFAULT 'VALID' CHECK (status IN ('VALID', 'REVOKED')),
    issued_at       timestamptz NOT NULL DEFAULT now(),
    revoked_at      timestamptz,
    UNIQUE NULLS NOT DISTINCT (reservation_id, section_id, seat_id, unit)
);
CREATE UNIQUE INDEX tickets_one_valid_per_seat ON tickets (seat_id) WHERE status = 'VALID' AND seat_id IS NOT NULL;
CREATE INDEX tickets_event ON tickets (event_id, status);

CREATE TABLE notifications (
    reservation_id  uuid NOT NULL REFERENCES reservations (id),
    kind            text NOT NULL,
    sent_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (reservation_id, kind)
);
