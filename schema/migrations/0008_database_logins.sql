-- Least-privilege database roles. encore_migrator owns the schema (encore
-- migrate connects as it), encore_app may only read and write rows (encore api
-- and encore worker), encore_reader only reads the browse tables (0003).
--
-- Roles belong to the cluster, not the database, so, as in 0003, creation
-- tolerates a role made by another database's migration, even concurrently,
-- and a migrating user that may not create roles (production: encore db
-- logins created them first, as a superuser). The roles are made NOLOGIN
-- here: passwords never live in migrations, and encore db logins turns on
-- LOGIN with one. Development and tests keep connecting as the superuser.
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['encore_migrator', 'encore_app'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_user AND (rolsuper OR rolcreaterole)) THEN
                BEGIN
                    EXECUTE format('CREATE ROLE %I NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE', r);
                EXCEPTION WHEN duplicate_object OR unique_violation THEN
                    NULL; -- created by a concurrent migration of another database
                END;
            ELSE
                RAISE NOTICE '% does not exist and % may not create it: run encore db logins', r, current_user;
            END IF;
        END IF;
    END LOOP;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'encore_app') THEN
        GRANT USAGE ON SCHEMA public TO encore_app;
        GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO encore_app;
        GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO encore_app;
        -- The migration history is the migrator's alone.
        REVOKE INSERT, UPDATE, DELETE ON schema_migrations FROM encore_app;
        -- Tables and sequences that later migrations create (as whoever runs
        -- this one: the migrator in production) are covered without a grant.
        ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO encore_app;
        ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO encore_app;
    END IF;
END $$;

-- Before PostgreSQL 15 every role could create tables in public; only the
-- schema's owner (the migrator) may. A no-op with a warning when the
-- migrating user does not own public.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
