-- One hold as store.CreateHold runs it (conditional-UPDATE strategy), for
-- pgbench: two random seats of the 50,000-seat bench event, a fresh account.
\set sec random(0, 9)
\set r random(0, 49)
\set n random(1, 99)
\set u random(1, 2000000000)
BEGIN;
SET LOCAL lock_timeout = 2000; SET LOCAL statement_timeout = 5000;
SELECT pg_advisory_xact_lock(:client_id * 1000003 + :r * 100 + :n);
SELECT currency, per_customer_limit, hold_ttl_seconds, starts_at, now(), onsale_at <= now() FROM events WHERE id = 'evt_bench_pg';
SELECT id FROM reservations WHERE user_id = 'pgb-' || :client_id || '-' || :u AND event_id = 'evt_bench_pg' AND status = 'PENDING_PAYMENT' FOR UPDATE;
INSERT INTO users (id) VALUES ('pgb-' || :client_id || '-' || :u) ON CONFLICT DO NOTHING;
INSERT INTO reservations (id, user_id, event_id, status, expires_at, total, currency)
  VALUES (gen_random_uuid(), 'pgb-' || :client_id || '-' || :u, 'evt_bench_pg', 'PENDING_PAYMENT', now() + interval '10 minutes', 0, 'EUR')
  RETURNING id AS rid \gset
UPDATE seats SET status = 'HELD', reservation_id = ':rid', version = version + 1
  WHERE event_id = 'evt_bench_pg' AND id = ANY(ARRAY['sec_bench_pg' || :sec || '-' || encore_row_label(:r) || '-' || :n, 'sec_bench_pg' || :sec || '-' || encore_row_label(:r) || '-' || (:n + 1)])
  AND status = 'AVAILABLE' RETURNING id, section_id, base_price;
SELECT sec.id, sec.capacity, (SELECT count(*) FROM seats s WHERE s.section_id = sec.id AND s.status IN ('HELD', 'SOLD')) FROM sections sec WHERE sec.id = 'sec_bench_pg' || :sec;
INSERT INTO reservation_items (reservation_id, event_id, section_id, seat_id, quantity, base_price, surge_bps, discount, price_at_lock)
  SELECT ':rid', 'evt_bench_pg', section_id, id, 1, base_price, 10000, 0, base_price FROM seats WHERE reservation_id = ':rid';
UPDATE reservations SET total = 2000 WHERE id = ':rid';
INSERT INTO outbox (topic, key, payload) VALUES ('inventory.changed', 'sec_bench_pg' || :sec, '{"event_id":"evt_bench_pg"}');
INSERT INTO outbox (topic, key, payload) VALUES ('hold.created', ':rid', '{"event_id":"evt_bench_pg"}');
INSERT INTO idempotency_keys (user_id, scope, key, request_hash, response_status, response_body)
  VALUES ('pgb', 'hold', ':rid', '\x00', 201, '{}');
COMMIT;
