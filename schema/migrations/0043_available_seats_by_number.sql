-- The seats offered instead of a taken one are the nearest free seats of its
-- row, then of the other rows by seat number. Found through the
-- (section_id, status) index, that read visited every free seat of the
-- section (about 3 ms on a 5,000-seat section), on every refused hold, the
-- ones the Redis bouncer refuses included. Free seats by number make it a
-- short range read. A seat taken (AVAILABLE to HELD) adds no entry here;
-- only a seat given back does.
CREATE INDEX seats_available_by_number ON seats (section_id, number) WHERE status = 'AVAILABLE';
