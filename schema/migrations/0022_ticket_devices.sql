-- Offline tickets: a ticket's codes are computed on one device at a time
-- from a key derived from the ticket's secret and a generation. Opening the
-- ticket's wallet on another device moves it there: the generation goes up,
-- the old device's key no longer makes accepted codes (the gate learns the
-- new generation from its next manifest delta, found by key_changed_at).
ALTER TABLE tickets
    ADD COLUMN device_id       text,
    ADD COLUMN key_generation  bigint NOT NULL DEFAULT 0 CHECK (key_generation >= 0),
    ADD COLUMN key_changed_at  timestamptz;
CREATE INDEX tickets_key_changed ON tickets (event_id, key_changed_at) WHERE key_changed_at IS NOT NULL;
