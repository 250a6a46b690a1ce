-- A walk finds no other property with room that night: the guest cannot be
-- relocated, so the booking is cancelled and refunded in full (a package
-- with it: every part or none). Such a walk is recorded with outcome
-- 'cancelled' and no destination, and counts towards the rooms freed.
ALTER TABLE walks
    ALTER COLUMN to_property DROP NOT NULL,
    ALTER COLUMN to_room_type DROP NOT NULL,
    ADD COLUMN outcome text NOT NULL DEFAULT 'relocated' CHECK (outcome IN ('relocated', 'cancelled')),
    ADD CONSTRAINT walks_destination CHECK ((outcome = 'relocated') = (to_property IS NOT NULL AND to_room_type IS NOT NULL));
