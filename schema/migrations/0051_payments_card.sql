-- The card that paid, as the capture's answer names it (the latest
-- charge's payment_method_details.card): the confirmation e-mail shows it.
-- It was read from the provider for every confirmation, one more call a
-- sale against the provider's rate limit (25 reads a second in Stripe's
-- test mode); the capture's own answer carries it when asked to expand the
-- charge. Empty for payments captured before this column, and for methods
-- that are not cards.
ALTER TABLE payments ADD COLUMN card_brand text, ADD COLUMN card_last4 text;
