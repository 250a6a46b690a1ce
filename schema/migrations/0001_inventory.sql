-- Inventory, reservations, promotions, idempotency and the outbox.
-- The constraints here carry the rules; application code is a second line.

CREATE TABLE users (
    id          text PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 200),
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE venues (
    id    text PRIMARY KEY,
    name  text NOT NULL,
    city  text NOT NULL
);

CREATE TABLE events (
    id                  text PRIMARY KEY,
    venue_id            text NOT NULL REFERENCES venues (id),
    title               text NOT NULL,
    artist              text NOT NULL DEFAULT '',
    genre               text NOT NULL DEFAULT '',
    description         text NOT NULL DEFAULT '',
    starts_at           timestamptz NOT NULL,
    onsale_at           timestamptz NOT NULL,
    currency            char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    per_customer_limit  int NOT NULL DEFAULT 6 CHECK (per_customer_limit > 0),
    hold_ttl_seconds    int NOT NULL DEFAULT 600 CHECK (hold_ttl_seconds BETWEEN 30 AND 3600),
    metered             boolean NOT NULL DEFAULT false,
    -- Cancellation with refund is allowed until this many hours before the show.
    cancel_cutoff_hours int NOT NULL DEFAULT 48 CHECK (cancel_cutoff_hours >= 0)
);

CREATE TABLE sections (
    id          text PRIMARY KEY,
    event_id    text NOT NULL REFERENCES events (id),
    name        text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('seated', 'general')),
    capacity    int NOT NULL CHECK (capacity > 0),
    base_price  bigint NOT NULL CHECK (base_price >= 0),
    -- Counted inventory for general admission: units held or sold. The check is
    -- the counted-capacity predicate; a conditional UPDATE can never pass it.
    ga_taken    int NOT NULL DEFAULT 0 CHECK (ga_taken >= 0 AND ga_taken <= capacity),
    sort_order  int NOT NULL DEFAULT 0,
    CHECK (kind = 'general' OR ga_taken = 0)
);
CREATE INDEX sections_event ON sections (event_id, sort_order);

CREATE TABLE reservations (
    id           uuid PRIMARY KEY,
    user_id      text NOT NULL REFERENCES users (id),
    event_id     text NOT NULL REFERENCES events (id),
    status       text NOT NULL CHECK (status IN ('PENDING_PAYMENT', 'PAID', 'EXPIRED', 'CANCELLED')),
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    ended_at     timestamptz,
    total        bigint NOT NULL CHECK (total >= 0),
    currency     char(3) NOT NULL,
    promo_code   text,
    CHECK ((status = 'PENDING_PAYMENT') = (ended_at IS NULL))
);
-- One pending checkout per user and event.
CREATE UNIQUE INDEX reservations_one_pending ON reservations (user_id, event_id)
    WHERE status = 'PENDING_PAYMENT';
-- The sweeper's work list.
CREATE INDEX reservations_pending_expiry ON reservations (expires_at)
    WHERE status = 'PENDING_PAYMENT';
CREATE INDEX reservations_user_event ON reservations (user_id, event_id);

CREATE TABLE seats (
    id              text PRIMARY KEY,
    event_id        text NOT NULL REFERENCES events (id),
    section_id      text NOT NULL REFERENCES sections (id),
    row_label       text NOT NULL,
    number          int NOT NULL,
    base_price      bigint NOT NULL CHECK (base_price >= 0),
    status          text NOT NULL DEFAULT 'AVAILABLE'
                    CHECK (status IN ('AVAILABLE', 'HELD', 'SOLD', 'BLOCKED')),
    reservation_id  uuid REFERENCES reservations (id),
    version         bigint NOT NULL DEFAULT 0,
    -- A HELD or SOLD seat names its reservation; any other seat names none.
    CHECK ((status IN ('HELD', 'SOLD')) = (reservation_id IS NOT NULL)),
    UNIQUE (section_id, row_label, number)
);
CREATE INDEX seats_section_status ON seats (section_id, status);
CREATE INDEX seats_reservation ON seats (reservation_id) WHERE reservation_id IS NOT NULL;

CREATE TABLE promotions (
    code          text PRIMARY KEY,
    event_id      text REFERENCES events (id),
    discount_bps  int NOT NULL CHECK (discount_bps BETWEEN 1 AND 10000),
    max_uses      int NOT NULL CHECK (max_uses >= 0),
    used          int NOT NULL DEFAULT 0,
    CHECK (used >= 0 AND used <= max_uses)
);

-- The composite key is the per-user cap: one live use of a code per user.
CREATE TABLE promotion_uses (
    code            text NOT NULL REFERENCES promotions (code),
    user_id         text NOT NULL,
    reservation_id  uuid NOT NULL REFERENCES reservations (id),
    PRIMARY KEY (code, user_id)
);

CREATE TABLE reservation_items (
    id              bigserial PRIMARY KEY,
    reservation_id  uuid NOT NULL REFERENCES reservations (id),
    event_id        text NOT NULL,
    section_id      text NOT NULL REFERENCES sections (id),
    seat_id         text REFERENCES seats (id),
    quantity        int NOT NULL DEFAULT 1 CHECK (quantity > 0),
    base_price      bigint NOT NULL,
    surge_bps       int NOT NULL CHECK (surge_bps BETWEEN 10000 AND 15000),
    discount        bigint NOT NULL CHECK (discount >= 0),
    price_at_lock   bigint NOT NULL CHECK (price_at_lock >= 0),
    -- live is true while the reservation is PENDING_PAYMENT or PAID.
    live            boolean NOT NULL DEFAULT true,
    CHECK (seat_id IS NULL OR quantity = 1)
);
-- Rule 1 of docs/ARCHITECTURE.md: a seat has at most one live owner.
CREATE UNIQUE INDEX reservation_items_one_live_owner ON reservation_items (seat_id)
    WHERE live AND seat_id IS NOT NULL;
CREATE INDEX reservation_items_reservation ON reservation_items (reservation_id);

CREATE TABLE idempotency_keys (
    user_id          text NOT NULL,
    scope            text NOT NULL,
    key              text NOT NULL,
    request_hash     bytea NOT NULL,
    response_status  int NOT NULL,
    response_body    jsonb NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, scope, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

CREATE TABLE outbox (
    id            bigserial PRIMARY KEY,
    topic         text NOT NULL,
    key           text NOT NULL,
    payload       jsonb NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    published_at  timestamptz
);
CREATE INDEX outbox_unpublished ON outbox (id) WHERE published_at IS NULL;

-- Row labels A..Z, AA, AB, ... for generated seats (0-based row index).
CREATE FUNCTION encore_row_label(r int) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    label text := '';
    n int := r + 1;
BEGIN
    WHILE n > 0 LOOP
        label := chr(65 + (n - 1) % 26) || label;
        n := (n - 1) / 26;
    END LOOP;
    RETURN label;
END $$;
