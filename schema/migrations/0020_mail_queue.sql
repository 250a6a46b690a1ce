-- The mail queue: every email to a fan, written once by its key (the
-- booking and kind), sent by whichever process claims it, retried with
-- backoff, and DEAD after the last attempt for support to see and resend.
-- Its own table, not the outbox: the outbox relays rows of a topic in
-- order, so one address whose server refuses would hold up every message
-- behind it.
CREATE TABLE mail_queue (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key             text NOT NULL UNIQUE CHECK (key <> ''),
    recipient       text NOT NULL,
    subject         text NOT NULL DEFAULT '',
    -- The message as notify.Message's JSON: text, HTML, inline images.
    message         jsonb NOT NULL,
    status          text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'SENT', 'DEAD')),
    attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    -- A claimed message is someone's until then; a sender that crashed
    -- between sending and marking leaves it to be claimed again after.
    lease_until     timestamptz,
    last_error      text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    sent_at         timestamptz,
    CHECK ((status = 'SENT') = (sent_at IS NOT NULL))
);
CREATE INDEX mail_queue_due ON mail_queue (next_attempt_at) WHERE status = 'PENDING';
CREATE INDEX mail_queue_by_status ON mail_queue (status, id DESC);
