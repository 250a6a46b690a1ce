-- A walk's refund is paid out at the provider (a partial refund of the
-- booking's payment, its idempotency key derived from the walk's id); the
-- provider's refund ID records that it was, so a retried walk pays nothing
-- twice.
ALTER TABLE walks ADD COLUMN refund_id text UNIQUE;
