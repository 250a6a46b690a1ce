-- Promotions an organiser runs: a percentage or an amount off each ticket,
-- a time window and a switch to disable them. The hold path reads them under
-- the promotion's row lock; a hold already taken keeps its frozen price.
ALTER TABLE promotions DROP CONSTRAINT IF EXISTS promotions_discount_bps_check;
ALTER TABLE promotions
    ADD COLUMN amount_off  bigint NOT NULL DEFAULT 0 CHECK (amount_off >= 0),
    ADD COLUMN per_user    int NOT NULL DEFAULT 1 CHECK (per_user = 1),
    ADD COLUMN starts_at   timestamptz,
    ADD COLUMN ends_at     timestamptz,
    ADD COLUMN disabled_at timestamptz,
    ADD COLUMN created_at  timestamptz NOT NULL DEFAULT now(),
    -- Exactly one kind of discount.
    ADD CONSTRAINT promotions_one_discount CHECK (
        (discount_bps BETWEEN 1 AND 10000 AND amount_off = 0) OR (discount_bps = 0 AND amount_off > 0)),
    ADD CONSTRAINT promotions_window CHECK (starts_at IS NULL OR ends_at IS NULL OR starts_at < ends_at);
CREATE INDEX promotions_event ON promotions (event_id);

-- The organiser's sales report, one row per reservation item: its section,
-- tickets, amount and state (sold, held until it expires, refunded, or NULL
-- for an ended hold). The report runs on the read-only pool, which reads this
-- view with its owner's rights and so never sees a fan's account or email.
CREATE VIEW sales_items AS
    SELECT i.event_id, i.section_id, i.quantity, i.price_at_lock * i.quantity AS amount,
           CASE WHEN r.status = 'PAID' THEN 'sold'
                WHEN r.status = 'PENDING_PAYMENT' AND r.expires_at > now() THEN 'held'
                WHEN r.status = 'CANCELLED' AND p.status = 'REFUNDED' THEN 'refunded' END AS state
    FROM reservation_items i
    JOIN reservations r ON r.id = i.reservation_id
    LEFT JOIN payments p ON p.reservation_id = r.id;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'encore_reader') THEN
        GRANT SELECT ON sales_items TO encore_reader;
    END IF;
END $$;
