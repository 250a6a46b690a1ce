-- The browse plane: full-text search over events, trigram matching for
-- autocomplete, and the read-only role its pool uses.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- The search document of an event: title and artist weigh most (A), venue,
-- city and genre next (B), the description least (D). Venue name and city live
-- in venues, so the document is a stored column kept by triggers rather than a
-- generated one.
CREATE FUNCTION encore_event_document(title text, artist text, venue text, city text, genre text, description text)
RETURNS tsvector LANGUAGE sql IMMUTABLE AS $$
    SELECT setweight(to_tsvector('english', coalesce(title, '')), 'A')
        || setweight(to_tsvector('english', coalesce(artist, '')), 'A')
        || setweight(to_tsvector('english', coalesce(venue, '') || ' ' || coalesce(city, '')), 'B')
        || setweight(to_tsvector('english', coalesce(genre, '')), 'B')
        || setweight(to_tsvector('english', coalesce(description, '')), 'D')
$$;

ALTER TABLE events ADD COLUMN search tsvector NOT NULL DEFAULT ''::tsvector;

CREATE FUNCTION encore_events_search_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT encore_event_document(NEW.title, NEW.artist, v.name, v.city, NEW.genre, NEW.description)
      INTO NEW.search FROM venues v WHERE v.id = NEW.venue_id;
    RETURN NEW;
END $$;
CREATE TRIGGER events_search BEFORE INSERT OR UPDATE OF title, artist, genre, description, venue_id ON events
    FOR EACH ROW EXECUTE FUNCTION encore_events_search_trigger();

CREATE FUNCTION encore_venues_search_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE events e SET search = encore_event_document(e.title, e.artist, NEW.name, NEW.city, e.genre, e.description)
    WHERE e.venue_id = NEW.id;
    RETURN NULL;
END $$;
CREATE TRIGGER venues_search AFTER UPDATE OF name, city ON venues
    FOR EACH ROW EXECUTE FUNCTION encore_venues_search_trigger();

UPDATE events e SET search = encore_event_document(e.title, e.artist, v.name, v.city, e.genre, e.description)
FROM venues v WHERE v.id = e.venue_id;

CREATE INDEX events_search ON events USING gin (search);
CREATE INDEX events_starts ON events (starts_at, id);
CREATE INDEX events_title_trgm ON events USING gin (title gin_trgm_ops);
CREATE INDEX events_artist_trgm ON events USING gin (artist gin_trgm_ops);
CREATE INDEX venues_city ON venues (lower(city));

-- The read-only role of the browse plane. Roles belong to the cluster, not
-- the database, so creation tolerates a role made by another database's
-- migration (even concurrently) and a migrating user without CREATEROLE. The
-- role cannot log in: the reader pool connects as the configured user and
-- switches to it with SET ROLE (see store.OpenReader; a superuser may, any
-- other user needs GRANT encore_reader TO it), or production gives the pool a
-- login role of its own that is granted encore_reader.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'encore_reader') THEN
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_user AND (rolsuper OR rolcreaterole)) THEN
            BEGIN
                CREATE ROLE encore_reader NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT;
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL; -- created by a concurrent migration of another database
            END;
        ELSE
            RAISE NOTICE 'encore_reader does not exist and % may not create it; the browse plane needs it', current_user;
        END IF;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'encore_reader') THEN
        GRANT USAGE ON SCHEMA public TO encore_reader;
        -- Only what browsing reads: no reservations, payments or keys.
        GRANT SELECT ON venues, events, sections, seats TO encore_reader;
    END IF;
END $$;
