-- A promotion may allow an account more than one live use (per_user). A
-- use is now keyed by its reservation; the hold path counts an account's
-- live uses under the promotion's row lock, which serialises every use of
-- the code, so the count cannot race.
ALTER TABLE promotions DROP CONSTRAINT IF EXISTS promotions_per_user_check;
ALTER TABLE promotions ADD CONSTRAINT promotions_per_user_check CHECK (per_user BETWEEN 1 AND 100);
ALTER TABLE promotion_uses DROP CONSTRAINT IF EXISTS promotion_uses_pkey;
ALTER TABLE promotion_uses ADD PRIMARY KEY (code, reservation_id);
CREATE INDEX IF NOT EXISTS promotion_uses_account ON promotion_uses (code, user_id);
