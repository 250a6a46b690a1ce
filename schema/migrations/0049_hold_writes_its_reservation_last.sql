-- A hold now writes its reservation last, in the statement that writes its
-- items, with its total (store/holds.go, holdWritesSQL): the total was an
-- UPDATE of the row just inserted, one more row write every hold, because
-- the prices are known only once the seats are taken (their base prices and
-- their sections' surge), and the seats named a reservation that had to
-- exist first. The two references a hold writes before its reservation are
-- checked at commit instead: a seat's owner and a promotion's use. Every
-- writer of either names a reservation of its own transaction or one that
-- exists; a reservation missing at commit still refuses the commit.
ALTER TABLE seats ALTER CONSTRAINT seats_reservation_id_fkey DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE promotion_uses ALTER CONSTRAINT promotion_uses_reservation_id_fkey DEFERRABLE INITIALLY DEFERRED;
