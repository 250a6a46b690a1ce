-- The saga's extra columns: the one-time 3-D Secure extension of a hold, and
-- the signals the fraud rules count over.
ALTER TABLE reservations ADD COLUMN extended boolean NOT NULL DEFAULT false;

ALTER TABLE fraud_decisions
    ADD COLUMN user_id   text NOT NULL DEFAULT '',
    ADD COLUMN ip        text NOT NULL DEFAULT '',
    ADD COLUMN device_id text NOT NULL DEFAULT '',
    ADD COLUMN card      text NOT NULL DEFAULT '';
CREATE INDEX fraud_decisions_user ON fraud_decisions (user_id, decided_at);
CREATE INDEX fraud_decisions_ip ON fraud_decisions (ip, decided_at);
CREATE INDEX fraud_decisions_device ON fraud_decisions (device_id, decided_at);
CREATE INDEX fraud_decisions_card ON fraud_decisions (card, decided_at);
