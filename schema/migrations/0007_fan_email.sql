-- The fan's email address, from the email claim of the token that created
-- the hold: the confirmation email goes there. Kept on the reservation, not
-- in the booking workflow's history, which is no place for personal data.
-- Nullable: tokens without the claim, and holds from before, have none.
ALTER TABLE reservations ADD COLUMN fan_email text;
