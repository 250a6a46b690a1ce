-- A fan's booking page waits for its booking to change instead of asking
-- every few hundred milliseconds (GET /v1/bookings/{id} with If-None-Match
-- and Prefer: wait): every write to what that page shows notifies the
-- channel booking_changed with the booking's ID, at commit, and the API's
-- one listening connection wakes the requests waiting on it. A payload
-- repeated in one transaction is delivered once, so a statement touching
-- many rows of one booking costs one notification.
CREATE FUNCTION notify_booking_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('booking_changed', NEW.reservation_id::text);
    RETURN NULL;
END
$$;

-- The reservation itself: its own ID, and only for what its page shows
-- after the hold (status, expiry, end); the hold's own writes precede any
-- reader.
CREATE FUNCTION notify_reservation_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('booking_changed', NEW.id::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER reservations_changed AFTER UPDATE ON reservations FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.expires_at IS DISTINCT FROM NEW.expires_at
          OR OLD.ended_at IS DISTINCT FROM NEW.ended_at)
    EXECUTE FUNCTION notify_reservation_changed();
CREATE TRIGGER payments_changed AFTER INSERT OR UPDATE ON payments FOR EACH ROW
    EXECUTE FUNCTION notify_booking_changed();
CREATE TRIGGER reservation_items_changed AFTER UPDATE ON reservation_items FOR EACH ROW
    EXECUTE FUNCTION notify_booking_changed();
CREATE TRIGGER reservation_nights_changed AFTER INSERT OR UPDATE ON reservation_nights FOR EACH ROW
    EXECUTE FUNCTION notify_booking_changed();
CREATE TRIGGER tickets_changed AFTER INSERT OR UPDATE ON tickets FOR EACH ROW
    EXECUTE FUNCTION notify_booking_changed();
CREATE TRIGGER vouchers_changed AFTER INSERT OR UPDATE ON vouchers FOR EACH ROW
    EXECUTE FUNCTION notify_booking_changed();
CREATE TRIGGER payment_disputes_changed AFTER INSERT OR UPDATE ON payment_disputes FOR EACH ROW
    EXECUTE FUNCTION notify_booking_changed();
CREATE TRIGGER outside_refunds_changed AFTER INSERT OR UPDATE ON outside_refunds FOR EACH ROW
    EXECUTE FUNCTION notify_booking_changed();
