-- One hold as store.CreateHold runs it for BenchmarkHoldHTTPRandomSeats (no
-- Idempotency-Key, no promotion), for pgbench -M prepared: two random seats
-- of the 50,000-seat bench event, a fresh account. Each pipeline is one
-- round trip, as each pgx batch is. Run with -D locked=0 for the
-- conditional-UPDATE strategy, -D locked=1 for the one that first locks the
-- seat rows in sorted order: the two differ in that one statement only.
-- The statements are the hold's own shapes: the seats' take with its surge
-- read, then the account, the reservation with its total, the items and the
-- outbox row in one statement (the seats' owner is checked at commit).
\set sec random(0, 9)
\set r random(0, 49)
\set n random(1, 99)
\set u random(1, 2000000000)
\startpipeline
BEGIN;
SELECT set_config('lock_timeout', '2000', true), set_config('statement_timeout', '5000', true);
SELECT currency, per_customer_limit, hold_ttl_seconds, starts_at, now(), onsale_at <= now() FROM events WHERE id = 'evt_bench_pg';
SELECT id, expires_at <= now() FROM reservations WHERE user_id = 'pgb-' || :client_id || '-' || :u AND event_id = 'evt_bench_pg' AND status = 'PENDING_PAYMENT' FOR UPDATE;
SELECT coalesce(sum(i.quantity), 0) FROM reservations r JOIN reservation_items i ON i.reservation_id = r.id
  WHERE r.user_id = 'pgb-' || :client_id || '-' || :u AND r.event_id = 'evt_bench_pg' AND i.live
    AND (r.status = 'PAID' OR (r.status = 'PENDING_PAYMENT' AND r.expires_at > now()));
\endpipeline
\startpipeline
\if :locked
SELECT id FROM seats WHERE event_id = 'evt_bench_pg' AND id = ANY(ARRAY['sec_bench_pg' || :sec || '-' || encore_row_label(:r) || '-' || :n, 'sec_bench_pg' || :sec || '-' || encore_row_label(:r) || '-' || (:n + 1)]) ORDER BY id FOR UPDATE;
\endif
WITH taken AS (UPDATE seats SET status = 'HELD', reservation_id = md5('pgb-' || :client_id || '-' || :u)::uuid, version = version + 1
  WHERE event_id = 'evt_bench_pg' AND id = ANY(ARRAY['sec_bench_pg' || :sec || '-' || encore_row_label(:r) || '-' || :n, 'sec_bench_pg' || :sec || '-' || encore_row_label(:r) || '-' || (:n + 1)])
  AND status = 'AVAILABLE' RETURNING id, section_id, base_price, category)
SELECT t.id, t.section_id, t.base_price, t.category, sec.capacity,
  (SELECT coalesce(sum(c.taken), 0) FROM section_taken c WHERE c.section_id = t.section_id) + count(*) OVER (PARTITION BY t.section_id)
  FROM taken t JOIN sections sec ON sec.id = t.section_id;
\endpipeline
\startpipeline
WITH fan AS (INSERT INTO users (id) VALUES ('pgb-' || :client_id || '-' || :u) ON CONFLICT DO NOTHING),
res AS (
  INSERT INTO reservations (id, user_id, event_id, status, expires_at, total, currency)
  VALUES (md5('pgb-' || :client_id || '-' || :u)::uuid, 'pgb-' || :client_id || '-' || :u, 'evt_bench_pg', 'PENDING_PAYMENT', now() + interval '10 minutes', 2000, 'EUR')
  RETURNING created_at, expires_at
), items AS (
  INSERT INTO reservation_items (reservation_id, event_id, section_id, seat_id, quantity, base_price, surge_bps, discount, price_at_lock)
  SELECT reservation_id, 'evt_bench_pg', section_id, id, 1, base_price, 10000, 0, base_price FROM seats
  WHERE id IN ('sec_bench_pg' || :sec || '-' || encore_row_label(:r) || '-' || :n, 'sec_bench_pg' || :sec || '-' || encore_row_label(:r) || '-' || (:n + 1))
    AND reservation_id = md5('pgb-' || :client_id || '-' || :u)::uuid ORDER BY id
), changed AS (
  INSERT INTO outbox (topic, key, payload) VALUES ('inventory.changed', 'sec_bench_pg' || :sec, '{"event_id":"evt_bench_pg"}')
)
SELECT created_at, expires_at FROM res;
\endpipeline
COMMIT;
