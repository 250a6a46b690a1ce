-- The waitlist of sold-out events (POST /v1/events/{id}/waitlist). Fans are
-- offered seats that come back in the order they joined; an offer is an
-- admission of its own (a pass that expires), and an offer left unused
-- passes to the next fan. Kept in PostgreSQL, not Redis: a fan's place on
-- the list must survive any restart.
CREATE TABLE waitlist_entries (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id         text NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    user_id          text NOT NULL CHECK (user_id <> ''),
    device_id        text NOT NULL DEFAULT '',
    email            text NOT NULL DEFAULT '',
    section_id       text,
    quantity         integer NOT NULL CHECK (quantity BETWEEN 1 AND 10),
    status           text NOT NULL DEFAULT 'WAITING'
                     CHECK (status IN ('WAITING', 'OFFERED', 'USED', 'EXPIRED', 'LEFT')),
    created_at       timestamptz NOT NULL DEFAULT now(),
    offered_at       timestamptz,
    offer_expires_at timestamptz,
    notified_at      timestamptz,
    CHECK (status <> 'OFFERED' OR (offered_at IS NOT NULL AND offer_expires_at IS NOT NULL))
);
-- One live entry per fan and event.
CREATE UNIQUE INDEX waitlist_live_entry ON waitlist_entries (event_id, user_id)
    WHERE status IN ('WAITING', 'OFFERED');
CREATE INDEX waitlist_order ON waitlist_entries (event_id, id) WHERE status IN ('WAITING', 'OFFERED');
CREATE INDEX waitlist_by_user ON waitlist_entries (user_id, id DESC);
