-- The booking-change notifications of 0044 can be switched off by the
-- writers' connections (ENCORE_BOOKING_CHANGES=false starts them with
-- encore.booking_changes = off): a notifying commit queues behind one
-- cluster-wide lock, which a primary committing sales at a very high rate
-- may not afford. Pages then read their booking again every second.
CREATE OR REPLACE FUNCTION notify_booking_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('encore.booking_changes', true) IS DISTINCT FROM 'off' THEN
        PERFORM pg_notify('booking_changed', NEW.reservation_id::text);
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION notify_reservation_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('encore.booking_changes', true) IS DISTINCT FROM 'off' THEN
        PERFORM pg_notify('booking_changed', NEW.id::text);
    END IF;
    RETURN NULL;
END
$$;
