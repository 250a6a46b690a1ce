-- One hold of two seats as the buy plane runs it (store.Holds.PreCheck, then
-- store.Holds.CreateHold; no Idempotency-Key, no promotion, no ticket type),
-- for pgbench -M prepared: two random neighbouring seats of an event laid
-- out as ten sections of 50 rows of 100 seats, by a fresh account. Each
-- pipeline is one round trip, as each pgx batch is; the COMMIT is the last.
--
--   -D event=<event id>        the event (BenchmarkHoldHTTP*: evt_bench_pg)
--   -D sections=<prefix>       its sections are <prefix>0 .. <prefix>9
--   -D locked=0|1              1 locks the seat rows in sorted order before
--                              the conditional UPDATE (a strategy compared
--                              in BENCHMARKS.md; the buy plane runs 0)
--
-- The statements are the hold's own shapes (keep them in step with
-- store/holds.go): the pre-check in a read-only snapshot on generic plans;
-- then the event's terms (key-share locked), the fan's pending hold (locked)
-- and purchase limit, the seats' take with its sections' surge; then the
-- account, the reservation with its total, the items and the outbox row in
-- one statement (the seats' owner is checked at commit). The items are
-- selected from the seats the take gave the reservation, where the buy plane
-- sends them as arrays: a take that found a seat gone writes fewer items
-- here, and is refused and rolled back there.
\set sec random(0, 9)
\set r random(0, 49)
\set n random(1, 99)
\set u random(1, 1000000000000000)
\set uid (:client_id + 1) * 10000000000000000 + :u
\startpipeline
BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;
SELECT set_config('plan_cache_mode', 'force_generic_plan', true);
WITH mine AS MATERIALIZED (SELECT id, event_id, status, expires_at, created_at FROM reservations WHERE user_id = :uid)
SELECT e.per_customer_limit, e.status, e.onsale_at, e.offsale_at, now(), e.metered, e.hold_ttl_seconds,
  (SELECT r.id FROM mine r WHERE r.event_id = e.id AND r.status = 'PENDING_PAYMENT' AND r.expires_at > now()),
  (SELECT coalesce(sum(i.quantity), 0) FROM mine r JOIN reservation_items i ON i.reservation_id = r.id
    WHERE r.event_id = e.id AND (i.live OR i.listing_id IS NOT NULL)
      AND (r.status = 'PAID' OR (r.status = 'PENDING_PAYMENT' AND r.expires_at > now())))
  FROM events e WHERE e.id = :event;
COMMIT;
\endpipeline
\startpipeline
BEGIN;
SELECT set_config('plan_cache_mode', 'force_generic_plan', true);
SELECT e.currency, e.per_customer_limit, e.hold_ttl_seconds, e.starts_at, now(), e.status, e.onsale_at, e.offsale_at,
  e.service_fee, coalesce(o.tax_rate_bp, 0), coalesce(o.prices_include_tax, true),
  coalesce((SELECT t.id FROM ticket_types t WHERE t.event_id = e.id ORDER BY t.position LIMIT 1), '')
  FROM events e LEFT JOIN organisations o ON o.id = e.org_id WHERE e.id = :event FOR KEY SHARE OF e;
WITH fans AS MATERIALIZED (
  SELECT id, status, expires_at FROM reservations
  WHERE user_id = :uid AND event_id IS NOT DISTINCT FROM :event::text ORDER BY id FOR UPDATE)
SELECT id, expires_at <= now() FROM fans WHERE status = 'PENDING_PAYMENT';
WITH mine AS MATERIALIZED (SELECT id, event_id, status, expires_at, created_at FROM reservations WHERE user_id = :uid)
SELECT coalesce(sum(i.quantity), 0) FROM mine r JOIN reservation_items i ON i.reservation_id = r.id
  WHERE r.event_id = :event AND (i.live OR i.listing_id IS NOT NULL)
    AND (r.status = 'PAID' OR (r.status = 'PENDING_PAYMENT' AND r.expires_at > now()));
\if :locked
SELECT id FROM seats WHERE event_id = :event AND id = ANY(ARRAY[:sections::text || :sec || '-' || encore_row_label(:r) || '-' || :n, :sections::text || :sec || '-' || encore_row_label(:r) || '-' || (:n + 1)]) ORDER BY id FOR UPDATE;
\endif
WITH taken AS (UPDATE seats SET status = 'HELD', reservation_id = md5(:uid::text)::uuid, version = version + 1
  WHERE event_id = :event AND id = ANY(ARRAY[:sections::text || :sec || '-' || encore_row_label(:r) || '-' || :n, :sections::text || :sec || '-' || encore_row_label(:r) || '-' || (:n + 1)])
  AND status = 'AVAILABLE' RETURNING id, section_id, base_price, category)
SELECT t.id, t.section_id, t.base_price, t.category, sec.capacity,
  (SELECT coalesce(sum(c.taken), 0) FROM section_taken c WHERE c.section_id = t.section_id) + count(*) OVER (PARTITION BY t.section_id)
  FROM taken t JOIN sections sec ON sec.id = t.section_id;
\endpipeline
\startpipeline
WITH fan AS (INSERT INTO users (id) VALUES (:uid::text) ON CONFLICT DO NOTHING),
res AS (
  INSERT INTO reservations (id, user_id, event_id, status, expires_at, currency, promo_code, fan_email,
    total, fees, tax, tax_rate_bp, prices_include_tax)
  VALUES (md5(:uid::text)::uuid, :uid, :event, 'PENDING_PAYMENT',
    now() + interval '10 minutes', 'EUR', NULL, NULL, 2000, 0, 0, 0, true)
  RETURNING created_at, expires_at
), items AS (
  INSERT INTO reservation_items (reservation_id, event_id, section_id, seat_id, quantity,
    base_price, surge_bps, discount, price_at_lock, ticket_type, fee)
  SELECT reservation_id, :event, section_id, id, 1, base_price, 10000, 0, base_price, NULL, 0 FROM seats
  WHERE id IN (:sections::text || :sec || '-' || encore_row_label(:r) || '-' || :n, :sections::text || :sec || '-' || encore_row_label(:r) || '-' || (:n + 1))
    AND reservation_id = md5(:uid::text)::uuid ORDER BY id
), changed AS (
  INSERT INTO outbox (topic, key, payload) VALUES ('inventory.changed', :sections::text || :sec,
    jsonb_build_object('event_id', :event::text, 'section_ids', jsonb_build_array(:sections::text || :sec)))
)
SELECT created_at, expires_at FROM res;
\endpipeline
COMMIT;
