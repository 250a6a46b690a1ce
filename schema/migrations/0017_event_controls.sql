-- The operator's runtime dials of an event (PATCH /v1/admin/events/{id}/controls).
-- One row per event that has been touched; an event without a row runs on
-- the configured defaults. Every process polls the rows changed since the
-- last seq it saw, so a change is in force everywhere within the poll
-- interval; the admin audit log records who turned which dial.
CREATE SEQUENCE event_controls_seq;

CREATE TABLE event_controls (
    event_id               text PRIMARY KEY REFERENCES events (id) ON DELETE CASCADE,
    admission_capacity     integer CHECK (admission_capacity BETWEEN 1 AND 100000),
    admission_capacity_min integer CHECK (admission_capacity_min BETWEEN 1 AND 100000),
    admission_capacity_max integer CHECK (admission_capacity_max BETWEEN 1 AND 100000),
    admission_paused       boolean NOT NULL DEFAULT false,
    sales_paused           boolean NOT NULL DEFAULT false,
    seatmap_cache_ttl_ms   integer CHECK (seatmap_cache_ttl_ms BETWEEN 0 AND 60000),
    live_push              boolean NOT NULL DEFAULT true,
    version                bigint NOT NULL DEFAULT 1,
    seq                    bigint NOT NULL DEFAULT nextval('event_controls_seq'),
    updated_at             timestamptz NOT NULL DEFAULT now(),
    updated_by             text NOT NULL DEFAULT '',
    CHECK (admission_capacity_min IS NULL OR admission_capacity_max IS NULL
           OR admission_capacity_min <= admission_capacity_max)
);
CREATE INDEX event_controls_by_seq ON event_controls (seq);
