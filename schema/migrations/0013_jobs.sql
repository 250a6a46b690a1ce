-- Long-running staff jobs (an event's cancellation): one row each, with the
-- counters the job's workflow moves as it goes, and one item row per
-- booking it has handled so a retried step never counts twice.
CREATE TABLE jobs (
    id          text PRIMARY KEY CHECK (id <> ''),
    kind        text NOT NULL,
    event_id    text REFERENCES events (id),
    org_id      text NOT NULL DEFAULT '',
    actor       text NOT NULL CHECK (actor <> ''),
    reason      text NOT NULL DEFAULT '',
    status      text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'done', 'failed')),
    total       integer NOT NULL DEFAULT 0,
    done        integer NOT NULL DEFAULT 0,
    failed      integer NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
CREATE UNIQUE INDEX jobs_one_cancellation_per_event ON jobs (event_id) WHERE kind = 'event-cancel';

CREATE TABLE job_items (
    job_id     text NOT NULL REFERENCES jobs (id),
    booking_id uuid NOT NULL REFERENCES reservations (id),
    ok         boolean NOT NULL,
    detail     text NOT NULL DEFAULT '',
    at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, booking_id)
);

-- Who cancelled a booking outside the fan's policy, and why (support staff,
-- or the organiser cancelling the event). NULL: the fan, within policy.
ALTER TABLE reservations
    ADD COLUMN cancelled_by  text,
    ADD COLUMN cancel_reason text;

-- Every message sent about a booking, resends included (notifications keeps
-- one row per kind, to send each automatic message once).
CREATE TABLE notification_log (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    reservation_id uuid NOT NULL REFERENCES reservations (id),
    kind           text NOT NULL,
    recipient      text NOT NULL,
    sent_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX notification_log_reservation ON notification_log (reservation_id, id);
CREATE INDEX reservations_event_status ON reservations (event_id, status, id);
