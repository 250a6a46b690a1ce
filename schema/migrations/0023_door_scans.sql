-- The door as the organiser sees it during the event: the scans venue gates
-- report (encore gate pushes its ledger's admissions and exits when it can
-- reach the API). The gate's own ledger decides who gets in; these rows
-- only count. A gate reports a scan again after a lost answer, so the key
-- makes a report idempotent.
CREATE TABLE door_scans (
    event_id     text NOT NULL REFERENCES events (id),
    ticket_id    text NOT NULL,
    gate_id      text NOT NULL,
    device_id    text NOT NULL DEFAULT '',
    direction    text NOT NULL CHECK (direction IN ('in', 'out')),
    zone         text NOT NULL DEFAULT '',
    scanned_at   timestamptz NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (event_id, ticket_id, direction, scanned_at)
);
CREATE INDEX door_scans_time ON door_scans (event_id, scanned_at);
