-- A hold prices its seats by how full their section is (surge), so every
-- hold read the section's taken seats. Counted from seats, that read grew
-- with the sale: about 300 buffers and 2-3 ms on a 5,000-seat section half
-- sold, the largest statement of a hold. The count is kept here instead, in
-- the same transaction as the seats it counts, so a hold reads a few rows
-- whatever the occupancy and sees exactly what it saw before: every
-- committed change and its own.
--
-- A seat is taken when it names a reservation (HELD or SOLD; 0001's check
-- ties the two). One row per section would queue every hold of a section
-- behind the one before it until that one commits; the count is split in
-- shards, each connection writing the shard of its backend, so concurrent
-- holds on one section write different rows. The read sums the shards.
CREATE TABLE section_taken (
    section_id TEXT NOT NULL REFERENCES sections(id),
    shard SMALLINT NOT NULL,
    taken INTEGER NOT NULL,
    PRIMARY KEY (section_id, shard)
);

-- The statement's changed seats, netted per section, in section order (so
-- two statements that share a shard lock its rows in one order). Updates
-- that change no seat's owner (a sale: HELD to SOLD, same reservation) net
-- to nothing and write nothing.
CREATE FUNCTION count_section_taken() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        INSERT INTO section_taken AS t (section_id, shard, taken)
        SELECT n.section_id, pg_backend_pid() % 16, sum((n.reservation_id IS NOT NULL)::int - (o.reservation_id IS NOT NULL)::int)
        FROM new_seats n JOIN old_seats o ON o.id = n.id
        WHERE (n.reservation_id IS NULL) <> (o.reservation_id IS NULL)
        GROUP BY n.section_id ORDER BY n.section_id
        ON CONFLICT (section_id, shard) DO UPDATE SET taken = t.taken + EXCLUDED.taken;
    ELSIF TG_OP = 'INSERT' THEN
        INSERT INTO section_taken AS t (section_id, shard, taken)
        SELECT section_id, pg_backend_pid() % 16, count(*) FROM new_seats WHERE reservation_id IS NOT NULL
        GROUP BY section_id ORDER BY section_id
        ON CONFLICT (section_id, shard) DO UPDATE SET taken = t.taken + EXCLUDED.taken;
    ELSE
        INSERT INTO section_taken AS t (section_id, shard, taken)
        SELECT section_id, pg_backend_pid() % 16, -count(*) FROM old_seats WHERE reservation_id IS NOT NULL
        GROUP BY section_id ORDER BY section_id
        ON CONFLICT (section_id, shard) DO UPDATE SET taken = t.taken + EXCLUDED.taken;
    END IF;
    RETURN NULL;
END
$$;

-- A trigger with transition tables names one event.
CREATE TRIGGER seats_taken_on_update AFTER UPDATE ON seats REFERENCING OLD TABLE AS old_seats NEW TABLE AS new_seats
    FOR EACH STATEMENT EXECUTE FUNCTION count_section_taken();
CREATE TRIGGER seats_taken_on_insert AFTER INSERT ON seats REFERENCING NEW TABLE AS new_seats
    FOR EACH STATEMENT EXECUTE FUNCTION count_section_taken();
CREATE TRIGGER seats_taken_on_delete AFTER DELETE ON seats REFERENCING OLD TABLE AS old_seats
    FOR EACH STATEMENT EXECUTE FUNCTION count_section_taken();

INSERT INTO section_taken (section_id, shard, taken)
SELECT section_id, 0, count(*) FROM seats WHERE reservation_id IS NOT NULL GROUP BY section_id;
