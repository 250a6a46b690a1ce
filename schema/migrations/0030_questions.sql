-- Questions the shop asks per ticket (the attendee's name) or per order,
-- and the answers a checkout gives. An answer names the ticket by its
-- place (seat, or unit of a standing section), so the ticket issued for
-- that place shows it and the gate's manifest carries it for the door's
-- name check. Answers are personal data: DELETE /v1/me erases them.
CREATE TABLE event_questions (
    event_id  text NOT NULL REFERENCES events (id),
    id        text NOT NULL CHECK (id ~ '^[a-z0-9][a-z0-9_-]{0,39}$'),
    position  int NOT NULL,
    label     text NOT NULL CHECK (length(label) BETWEEN 1 AND 200),
    kind      text NOT NULL CHECK (kind IN ('text', 'email', 'choice', 'bool')),
    choices   text[] NOT NULL DEFAULT '{}',
    required  boolean NOT NULL DEFAULT false,
    per       text NOT NULL DEFAULT 'ticket' CHECK (per IN ('ticket', 'order')),
    PRIMARY KEY (event_id, id),
    UNIQUE (event_id, position)
);
CREATE TABLE booking_answers (
    reservation_id  uuid NOT NULL REFERENCES reservations (id),
    question_id     text NOT NULL,
    ticket_index    int NOT NULL CHECK (ticket_index >= 0),
    section_id      text,
    seat_id         text,
    unit            int,
    value           text NOT NULL CHECK (length(value) <= 500),
    PRIMARY KEY (reservation_id, question_id, ticket_index)
);

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'encore_reader') THEN
        GRANT SELECT ON event_questions TO encore_reader;
    END IF;
END $$;
