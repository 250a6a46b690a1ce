-- Hotels and packages: counted room-night inventory beside the seats. A hold
-- may carry stays, alone (a hotel-only hold, no event) or with seats (a
-- package); the room-nights follow the reservation's one lifecycle.

CREATE TABLE properties (
    id                text PRIMARY KEY,
    name              text NOT NULL,
    city              text NOT NULL,
    -- The venue the property is near, for "near the arena" searches.
    venue_id          text REFERENCES venues (id),
    currency          char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    -- The rate's rules: the shortest stay sold, and the cancellation policy
    -- (free until this many days before check-in, then the first night).
    min_stay          int NOT NULL DEFAULT 1 CHECK (min_stay BETWEEN 1 AND 30),
    free_cancel_days  int NOT NULL DEFAULT 2 CHECK (free_cancel_days >= 0)
);
CREATE INDEX properties_city ON properties (lower(city));

CREATE TABLE room_types (
    property_id  text NOT NULL REFERENCES properties (id),
    id           text NOT NULL,
    name         text NOT NULL,
    max_guests   int NOT NULL CHECK (max_guests BETWEEN 1 AND 20),
    PRIMARY KEY (property_id, id)
);

-- One row per property, room type and night: counted inventory. A hold
-- takes a night with the conditional UPDATE whose predicate is
-- room_nights_within_limit; the CHECK is the backstop no UPDATE can pass.
-- Overbooking applies here only, never to seats.
CREATE TABLE room_nights (
    property_id     text NOT NULL,
    room_type       text NOT NULL,
    night           date NOT NULL,
    allotment       int NOT NULL CHECK (allotment >= 0),
    overbook_limit  int NOT NULL DEFAULT 0 CHECK (overbook_limit >= 0),
    held            int NOT NULL DEFAULT 0 CHECK (held >= 0),
    sold            int NOT NULL DEFAULT 0 CHECK (sold >= 0),
    -- The night's rate per room, in minor units of the property's currency.
    price           bigint NOT NULL CHECK (price >= 0),
    PRIMARY KEY (property_id, room_type, night),
    FOREIGN KEY (property_id, room_type) REFERENCES room_types (property_id, id),
    CONSTRAINT room_nights_within_limit CHECK (held + sold <= allotment + overbook_limit)
);

-- A hotel-only hold has no event. Every reader of reservations.event_id
-- tolerates NULL (coalesce, LEFT JOIN); reservations_one_pending treats NULLs
-- as distinct, so hotel-only holds are not limited to one per fan.
ALTER TABLE reservations ALTER COLUMN event_id DROP NOT NULL;

-- The nights a reservation holds or bought, price frozen at hold time. live
-- follows reservation_items.live: true while PENDING_PAYMENT or PAID. A walk
-- ends the original night (live false) and adds the night at the property
-- the guest was moved to.
CREATE TABLE reservation_nights (
    reservation_id  uuid NOT NULL REFERENCES reservations (id),
    stay            int NOT NULL CHECK (stay >= 0),   -- the stay's index in the hold
    property_id     text NOT NULL,
    room_type       text NOT NULL,
    night           date NOT NULL,
    checkin         date NOT NULL,
    checkout        date NOT NULL CHECK (checkout > checkin),
    rooms           int NOT NULL CHECK (rooms > 0),
    price           bigint NOT NULL CHECK (price >= 0),   -- per room, frozen
    currency        char(3) NOT NULL,
    live            boolean NOT NULL DEFAULT true,
    PRIMARY KEY (reservation_id, stay, property_id, night),
    FOREIGN KEY (property_id, room_type, night) REFERENCES room_nights (property_id, room_type, night)
);
CREATE INDEX reservation_nights_night ON reservation_nights (property_id, night) WHERE live;

-- One voucher per stay of a paid booking: what the guest shows at the desk.
CREATE TABLE vouchers (
    id              text PRIMARY KEY,
    reservation_id  uuid NOT NULL REFERENCES reservations (id),
    stay            int NOT NULL,
    property_id     text NOT NULL,
    room_type       text NOT NULL,
    checkin         date NOT NULL,
    checkout        date NOT NULL,
    confirmation    text NOT NULL,
    -- VOID once the booking is cancelled (or its sale undone).
    status          text NOT NULL DEFAULT 'VALID' CHECK (status IN ('VALID', 'VOID')),
    issued_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (reservation_id, stay)
);

-- A walk: an overbooked night's guest moved to another property, the night
-- refunded and a compensation recorded. A booking is walked at most once.
CREATE TABLE walks (
    id              bigserial PRIMARY KEY,
    reservation_id  uuid NOT NULL REFERENCES reservations (id),
    night           date NOT NULL,
    from_property   text NOT NULL,
    from_room_type  text NOT NULL,
    to_property     text NOT NULL,
    to_room_type    text NOT NULL,
    rooms           int NOT NULL CHECK (rooms > 0),
    refund          bigint NOT NULL CHECK (refund >= 0),
    compensation    bigint NOT NULL CHECK (compensation >= 0),
    currency        char(3) NOT NULL,
    notified_at     timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT walks_once_per_booking UNIQUE (reservation_id)
);
CREATE INDEX walks_night ON walks (from_property, night);

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'encore_reader') THEN
        -- Search reads the hotels and their nights' counters, nothing else.
        GRANT SELECT ON properties, room_types, room_nights TO encore_reader;
    END IF;
END $$;
