-- A seat's status changes on every hold, sale and release, so no such update
-- of a seat is HOT: each writes an entry in every index of seats whose
-- predicate the new row meets. A held seat met four: the primary key, the
-- (section, row, number) key, seats_reservation and (section_id, status).
-- The last served no reader the others do not: a section's free seats are
-- read through seats_available_by_number (0043, which a taken seat leaves),
-- a section's seats through the (section, row, number) key, a reservation's
-- through seats_reservation. Only the organisers' count of a section's
-- blocked seats read it for a status of its own, and a partial index of the
-- blocked seats serves that, written only when staff block or unblock a
-- seat. A hold's seats now write three index entries each, a sale's and a
-- release's likewise.
DROP INDEX seats_section_status;
CREATE INDEX seats_blocked ON seats (section_id) WHERE status = 'BLOCKED';
