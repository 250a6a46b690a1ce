-- Organisers' venues and events: a venue owns a layout (sections of rows of
-- seats with their coordinates and price categories); an event is drafted
-- from a venue, copying its layout into sections and seats with the base
-- price of each seat's category, and sells only once published, between its
-- on-sale and off-sale times. Existing events become PUBLISHED with no
-- off-sale time, so nothing that was on sale stops selling.

ALTER TABLE venues
    ADD COLUMN org_id     text NOT NULL DEFAULT 'org_encore' CHECK (length(org_id) BETWEEN 1 AND 100),
    ADD COLUMN timezone   text NOT NULL DEFAULT 'UTC',
    ADD COLUMN created_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX venues_org ON venues (org_id, id);

-- A venue's layout. Section IDs are the layout's own, unique per venue; a
-- seat's category is its section's (kept on the seat so an event's seat map
-- and pricing never join back to the venue).
CREATE TABLE venue_sections (
    venue_id    text NOT NULL REFERENCES venues (id),
    id          text NOT NULL,
    name        text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('seated', 'general')),
    category    text NOT NULL CHECK (length(category) BETWEEN 1 AND 40),
    capacity    int NOT NULL CHECK (capacity > 0),
    sort_order  int NOT NULL,
    PRIMARY KEY (venue_id, id)
);

CREATE TABLE venue_seats (
    venue_id    text NOT NULL,
    section_id  text NOT NULL,
    row_label   text NOT NULL CHECK (length(row_label) BETWEEN 1 AND 16),
    number      int NOT NULL CHECK (number > 0),
    x           double precision NOT NULL,
    y           double precision NOT NULL,
    category    text NOT NULL,
    PRIMARY KEY (venue_id, section_id, row_label, number),
    FOREIGN KEY (venue_id, section_id) REFERENCES venue_sections (venue_id, id)
);

-- The stored lifecycle of an event (vocab.EventStatuses). ON_SALE is not
-- stored: a PUBLISHED event is on sale between onsale_at and offsale_at.
ALTER TABLE events
    ADD COLUMN org_id                text NOT NULL DEFAULT 'org_encore' CHECK (length(org_id) BETWEEN 1 AND 100),
    ADD COLUMN status                text NOT NULL DEFAULT 'PUBLISHED'
                                     CHECK (status IN ('DRAFT', 'PUBLISHED', 'CANCELLED')),
    -- NULL: the sale never closes by itself (events made before this migration).
    ADD COLUMN offsale_at            timestamptz,
    -- NULL: starts_at - cancel_cutoff_hours, the rule before this migration.
    ADD COLUMN cancellation_deadline timestamptz,
    ADD COLUMN created_at            timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN published_at          timestamptz,
    ADD CONSTRAINT events_offsale_after_onsale CHECK (offsale_at IS NULL OR offsale_at > onsale_at);
UPDATE events SET published_at = onsale_at WHERE published_at IS NULL;
CREATE INDEX events_org ON events (org_id, id);

-- The base price of each category of an event's seats, in minor units.
CREATE TABLE event_prices (
    event_id  text NOT NULL REFERENCES events (id),
    category  text NOT NULL,
    amount    bigint NOT NULL CHECK (amount >= 0),
    currency  char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    PRIMARY KEY (event_id, category)
);

-- Sections and seats carry their category; seats their place on the plan.
-- Seats made before this migration were a grid: x is the seat number, y the
-- row's index (A = 0). A seat inserted without a place is at (0, 0).
ALTER TABLE sections ADD COLUMN category text NOT NULL DEFAULT 'standard';
ALTER TABLE seats
    ADD COLUMN category text NOT NULL DEFAULT 'standard',
    ADD COLUMN x double precision NOT NULL DEFAULT 0,
    ADD COLUMN y double precision NOT NULL DEFAULT 0;

-- The inverse of encore_row_label: A = 0, Z = 25, AA = 26; NULL for a label
-- that is not letters.
CREATE FUNCTION encore_row_index(label text) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    n int := 0;
    c int;
BEGIN
    IF label !~ '^[A-Z]{1,6}$' THEN
        RETURN NULL;
    END IF;
    FOREACH c IN ARRAY (SELECT array_agg(ascii(ch)) FROM regexp_split_to_table(label, '') AS ch) LOOP
        n := n * 26 + (c - 64);
    END LOOP;
    RETURN n - 1;
END $$;

UPDATE seats SET x = number, y = coalesce(encore_row_index(row_label), 0);

-- Every block and unblock of a seat by staff, with its reason: the seat's
-- status says where it stands, this log says why.
CREATE TABLE seat_blocks (
    id        bigserial PRIMARY KEY,
    event_id  text NOT NULL REFERENCES events (id),
    seat_id   text NOT NULL REFERENCES seats (id),
    action    text NOT NULL CHECK (action IN ('block', 'unblock')),
    reason    text NOT NULL CHECK (length(reason) BETWEEN 1 AND 500),
    actor     text NOT NULL,
    at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX seat_blocks_seat ON seat_blocks (seat_id, at);
