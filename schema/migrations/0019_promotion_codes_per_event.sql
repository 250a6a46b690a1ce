-- Promotion codes are an event's, not global. Before, the code alone was the
-- key: an organisation could not create a code another organisation already
-- ran (409 "code taken"), which also told it that the other one ran it, and a
-- hold looked the code up across every event. A code is now unique per event:
-- two organisations (or two events of one) may both run SUMMER, and a hold
-- finds only the code of the event it is for.
--
-- Every path that writes a promotion names its event (the admin API, the
-- demo data); a row without one could only have been written by hand, and no
-- event can be guessed for it, so the migration stops and says so rather than
-- dropping it or turning it into another event's code.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM promotions WHERE event_id IS NULL) THEN
        RAISE EXCEPTION 'promotions without an event_id exist (codes: %); give each an event or delete it, then migrate again',
            (SELECT string_agg(code, ', ') FROM promotions WHERE event_id IS NULL);
    END IF;
END $$;

-- A use names its promotion by event and code, so an account's uses of one
-- event's SUMMER never count against another event's SUMMER. Codes are still
-- unique here, so the backfill is unambiguous.
ALTER TABLE promotion_uses DROP CONSTRAINT promotion_uses_code_fkey;
ALTER TABLE promotion_uses ADD COLUMN event_id text;
UPDATE promotion_uses u SET event_id = p.event_id FROM promotions p WHERE p.code = u.code;
ALTER TABLE promotion_uses ALTER COLUMN event_id SET NOT NULL;

ALTER TABLE promotions ALTER COLUMN event_id SET NOT NULL;
ALTER TABLE promotions DROP CONSTRAINT promotions_pkey;
ALTER TABLE promotions ADD PRIMARY KEY (event_id, code);
-- The key's leading column serves the listing of an event's codes.
DROP INDEX IF EXISTS promotions_event;

ALTER TABLE promotion_uses
    ADD CONSTRAINT promotion_uses_promotion_fkey FOREIGN KEY (event_id, code) REFERENCES promotions (event_id, code);
ALTER TABLE promotion_uses DROP CONSTRAINT promotion_uses_pkey;
ALTER TABLE promotion_uses ADD PRIMARY KEY (event_id, code, reservation_id);
-- The per-account count runs under the promotion's row lock (0015).
DROP INDEX IF EXISTS promotion_uses_account;
CREATE INDEX promotion_uses_account ON promotion_uses (event_id, code, user_id);
