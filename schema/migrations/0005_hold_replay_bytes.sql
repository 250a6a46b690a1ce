-- Replayed hold answers must be the first answer's exact bytes, and jsonb
-- re-encodes (key order, spacing). The hold transaction now records only the
-- key, its request and the reservation it created; the body is saved as bytes
-- once rendered, after commit. A record with a reservation and no body yet is
-- rendered from that reservation when replayed. Older jsonb bodies stay
-- readable until their 24 hours are up.
ALTER TABLE idempotency_keys
    ADD COLUMN reservation_id uuid,
    ADD COLUMN response_bytes bytea,
    ALTER COLUMN response_body DROP NOT NULL;
