-- Whether a ticket scanned out at the door may come back in: the event's
-- rule, carried to the venue gates in the manifest.
ALTER TABLE events ADD COLUMN reentry boolean NOT NULL DEFAULT false;
