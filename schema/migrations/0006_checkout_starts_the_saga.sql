-- The booking workflow now starts at checkout, so a hold no longer writes a
-- hold.created outbox row and nothing relays that topic any more. Rows left
-- from before would wait forever and hold up the relay's oldest-unpublished
-- age: mark them published (a hold that is checked out starts its workflow
-- then).
UPDATE outbox SET published_at = now() WHERE topic = 'hold.created' AND published_at IS NULL;

-- The waiting room's adaptive mode reads recent payment outcomes every few
-- seconds from every admitter.
CREATE INDEX IF NOT EXISTS payments_updated_at ON payments (updated_at);
