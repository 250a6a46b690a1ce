-- The sales report counts a seat once: a resale buyer's line (listing_id)
-- is not a sale of the organiser's (the seller's line stays sold). Resale
-- has its own columns: tickets resold, their volume and the fees kept.
CREATE OR REPLACE VIEW sales_items AS
    SELECT i.event_id, i.section_id, i.quantity, i.price_at_lock * i.quantity AS amount,
           CASE WHEN r.status = 'PAID' AND EXISTS (SELECT 1 FROM payment_disputes d
                                                   WHERE d.reservation_id = r.id AND d.status = 'lost') THEN 'charged_back'
                WHEN r.status = 'PAID' THEN 'sold'
                WHEN r.status = 'PENDING_PAYMENT' AND r.expires_at > now() THEN 'held'
                WHEN r.status = 'CANCELLED' AND p.status = 'REFUNDED' THEN 'refunded' END AS state
    FROM reservation_items i
    JOIN reservations r ON r.id = i.reservation_id
    LEFT JOIN payments p ON p.reservation_id = r.id
    WHERE i.listing_id IS NULL;

CREATE VIEW resale_sales AS
    SELECT l.event_id, l.section_id, count(*) AS sold, sum(l.price) AS volume, sum(l.fee) AS fees
    FROM resale_listings l JOIN reservations r ON r.id = l.reservation_id
    WHERE l.status = 'SOLD' AND r.status = 'PAID'
    GROUP BY l.event_id, l.section_id;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'encore_reader') THEN
        GRANT SELECT ON sales_items, resale_sales TO encore_reader;
    END IF;
END $$;
