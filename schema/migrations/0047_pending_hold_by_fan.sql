-- A hold first looks up the fan's own pending hold on the event (user,
-- event, status PENDING_PAYMENT). A connection plans that statement once for
-- good after a few runs (PostgreSQL's generic plan for a prepared
-- statement); on a sale's first minute the table is empty or small and
-- never analysed, and the plan made then scanned every pending hold through
-- the expiry index (or every hold of the event), a plan kept while the sale
-- grew the table: about 900 buffers a hold after 4,000 holds, growing with
-- each. With status among the unique index's columns, every column of it
-- is bound by the lookup, so the planner knows the index gives at most one
-- row and picks it at any size, analysed or not. Same rows, same
-- constraint name (a second pending hold of one fan still violates it).
CREATE UNIQUE INDEX reservations_one_pending_by_status ON reservations (user_id, event_id, status)
    WHERE status = 'PENDING_PAYMENT';
DROP INDEX reservations_one_pending;
ALTER INDEX reservations_one_pending_by_status RENAME TO reservations_one_pending;
