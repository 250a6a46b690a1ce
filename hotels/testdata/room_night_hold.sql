-- One hotel-only hold as store.CreateStayHold runs it for
-- BenchmarkRoomNightHolds (no Idempotency-Key): a fresh account, two nights
-- of one room type taken by the conditional UPDATE whose predicate is the
-- rule, the nights written with their prices. For pgbench -M prepared with
-- -D prop=<property ID> (a property with a "double" room type on sale from
-- tomorrow, allotment large enough for the run).
\set u random(1, 2000000000)
BEGIN;
SET LOCAL lock_timeout = 2000; SET LOCAL statement_timeout = 5000;
SELECT p.currency, p.min_stay FROM properties p JOIN room_types rt ON rt.property_id = p.id WHERE p.id = :prop AND rt.id = 'double';
INSERT INTO users (id) VALUES ('pgb-' || :client_id || '-' || :u) ON CONFLICT DO NOTHING;
INSERT INTO reservations (id, user_id, event_id, status, expires_at, total, currency)
  VALUES (md5('pgb-' || :client_id || '-' || :u)::uuid, 'pgb-' || :client_id || '-' || :u, NULL, 'PENDING_PAYMENT', now() + interval '15 minutes', 0, 'EUR')
  RETURNING created_at, expires_at;
UPDATE room_nights SET held = held + 1
  WHERE property_id = :prop AND room_type = 'double' AND night >= current_date + 1 AND night < current_date + 3
    AND held + sold + 1 <= allotment + overbook_limit
  RETURNING night, price;
INSERT INTO reservation_nights (reservation_id, stay, property_id, room_type, night, checkin, checkout, rooms, price, currency)
  SELECT md5('pgb-' || :client_id || '-' || :u)::uuid, 0, :prop, 'double', night, current_date + 1, current_date + 3, 1, price, 'EUR'
  FROM room_nights WHERE property_id = :prop AND room_type = 'double' AND night >= current_date + 1 AND night < current_date + 3;
UPDATE reservations SET total = 20000 WHERE id = md5('pgb-' || :client_id || '-' || :u)::uuid;
COMMIT;
