-- Hotel operations: a property belongs to an organisation (its hoteliers'
-- org claim) and says where it is, when guests arrive and leave and whom to
-- tell; a night can be stop-sold; venues have coordinates, so fans see the
-- hotels nearest the show; and every booking, change, cancellation and walk
-- of a property leaves a notice for the property's email, written in the
-- transaction that made it.

ALTER TABLE properties
    ADD COLUMN org_id          text CHECK (length(org_id) BETWEEN 1 AND 100),
    ADD COLUMN address         text NOT NULL DEFAULT '',
    ADD COLUMN lat             double precision CHECK (lat BETWEEN -90 AND 90),
    ADD COLUMN lng             double precision CHECK (lng BETWEEN -180 AND 180),
    ADD COLUMN timezone        text NOT NULL DEFAULT 'UTC',
    ADD COLUMN check_in_time   time NOT NULL DEFAULT '15:00',
    ADD COLUMN check_out_time  time NOT NULL DEFAULT '11:00',
    ADD COLUMN contact_email   text NOT NULL DEFAULT '',
    ADD COLUMN created_at      timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN updated_at      timestamptz NOT NULL DEFAULT now(),
    ADD CONSTRAINT properties_located CHECK ((lat IS NULL) = (lng IS NULL));
-- A new property's currency may wait for its first rate.
ALTER TABLE properties ALTER COLUMN currency DROP NOT NULL;
-- Properties from before belong to their venue's organisation (none: only
-- an admin manages them) and keep its clocks.
UPDATE properties p SET org_id = v.org_id, timezone = v.timezone FROM venues v WHERE v.id = p.venue_id;
CREATE INDEX properties_org ON properties (org_id, created_at DESC, id);

-- A stop-sold night sells nothing more: holds and searches pass it by, and
-- walks never send a guest there. Rooms already held or sold keep their
-- guests.
ALTER TABLE room_nights ADD COLUMN stop_sell boolean NOT NULL DEFAULT false;

ALTER TABLE venues
    ADD COLUMN lat double precision CHECK (lat BETWEEN -90 AND 90),
    ADD COLUMN lng double precision CHECK (lng BETWEEN -180 AND 180),
    ADD CONSTRAINT venues_located CHECK ((lat IS NULL) = (lng IS NULL));

-- What a property is told: a paid booking with a stay there (BOOKED), a
-- guest walked in from another property (CHANGED, night), a paid booking
-- with a stay there cancelled (CANCELLED), a guest walked off one of its
-- nights (WALKED, night). One of each kind per booking and property; the
-- mail loop (hotels.Notices) emails each and stamps sent_at.
CREATE TABLE property_notices (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    property_id     text NOT NULL REFERENCES properties (id),
    reservation_id  uuid NOT NULL REFERENCES reservations (id),
    kind            text NOT NULL CHECK (kind IN ('BOOKED', 'CHANGED', 'CANCELLED', 'WALKED')),
    night           date,
    created_at      timestamptz NOT NULL DEFAULT now(),
    sent_at         timestamptz,
    CONSTRAINT property_notices_once UNIQUE (reservation_id, property_id, kind)
);
CREATE INDEX property_notices_unsent ON property_notices (id) WHERE sent_at IS NULL;
