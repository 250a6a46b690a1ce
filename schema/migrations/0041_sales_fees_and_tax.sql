-- The sales report shows fees and tax apart: each line's service fees
-- (frozen at hold time), and each paid booking's tax.
CREATE OR REPLACE VIEW sales_items AS
    SELECT i.event_id, i.section_id, i.quantity, i.price_at_lock * i.quantity AS amount,
           CASE WHEN r.status = 'PAID' AND EXISTS (SELECT 1 FROM payment_disputes d
                                                   WHERE d.reservation_id = r.id AND d.status = 'lost') THEN 'charged_back'
                WHEN r.status = 'PAID' THEN 'sold'
                WHEN r.status = 'PENDING_PAYMENT' AND r.expires_at > now() THEN 'held'
                WHEN r.status = 'CANCELLED' AND p.status = 'REFUNDED' THEN 'refunded' END AS state,
           i.fee
    FROM reservation_items i
    JOIN reservations r ON r.id = i.reservation_id
    LEFT JOIN payments p ON p.reservation_id = r.id
    WHERE i.listing_id IS NULL;

-- The tax of an event's paid bookings (the reader pool reads no
-- reservations directly).
CREATE VIEW sales_tax AS
    SELECT r.event_id, sum(r.tax) AS tax
    FROM reservations r WHERE r.status = 'PAID' AND r.event_id IS NOT NULL
    GROUP BY r.event_id;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'encore_reader') THEN
        GRANT SELECT ON sales_items, sales_tax TO encore_reader;
    END IF;
END $$;
