package schema

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The database roles of a production deployment (see 0008_database_logins).
const (
	// MigratorRole owns the database and its schema: encore migrate.
	MigratorRole = "encore_migrator"
	// AppRole reads and writes rows and changes no schema: encore api and worker.
	AppRole = "encore_app"
	// ReaderRole reads the browse tables only: the browse plane's pool.
	ReaderRole = "encore_reader"
)

// Logins are the passwords SetupLogins gives each role.
type Logins struct {
	Migrator, App, Reader string
}

// scramIterations is PostgreSQL's own default (scram_iterations).
const scramIterations = 4096

// SetupLogins creates (or updates) the three roles as logins with the given
// passwords, makes encore_migrator the owner of the database, of schema public
// and of every object already in it (so a database migrated as a superuser
// converts), and grants encore_app and encore_reader their rows. It must run as
// a superuser, and is safe to run again (to change a password, say).
//
// Passwords reach the server only as SCRAM-SHA-256 verifiers computed here, so
// no statement log ever holds one.
func SetupLogins(ctx context.Context, pool *pgxpool.Pool, l Logins) error {
	for role, pw := range map[string]string{MigratorRole: l.Migrator, AppRole: l.App, ReaderRole: l.Reader} {
		if pw == "" {
			return fmt.Errorf("schema: no password for %s", role)
		}
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var super bool
	if err := conn.QueryRow(ctx, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&super); err != nil {
		return fmt.Errorf("schema: check the login: %w", err)
	}
	if !super {
		return errors.New("schema: setting up the logins needs a superuser (it hands the database to encore_migrator)")
	}
	// The same advisory lock as Migrate: never hand objects over mid-migration.
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, lockKey); err != nil {
		return fmt.Errorf("schema: take migration lock: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, lockKey) }()
	return pgx.BeginFunc(ctx, conn.Conn(), func(tx pgx.Tx) error {
		for _, r := range []struct{ role, password string }{
			{MigratorRole, l.Migrator}, {AppRole, l.App}, {ReaderRole, l.Reader},
		} {
			if _, err := tx.Exec(ctx, `SELECT set_config('encore.role', $1, true)`, r.role); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, createRole); err != nil {
				return fmt.Errorf("schema: create %s: %w", r.role, err)
			}
			verifier, err := scramVerifier(r.password)
			if err != nil {
				return err
			}
			var alter string
			if err := tx.QueryRow(ctx, `SELECT format('ALTER ROLE %I WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD %L', $1::text, $2::text)`,
				r.role, verifier).Scan(&alter); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, alter); err != nil {
				return fmt.Errorf("schema: set the password of %s: %w", r.role, err)
			}
		}
		if _, err := tx.Exec(ctx, handOver); err != nil {
			return fmt.Errorf("schema: hand the database to %s: %w", MigratorRole, err)
		}
		return nil
	})
}

// createRole makes a role when missing. DO takes no parameters, so the name
// travels in a transaction-local setting, encore.role.
const createRole = `DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_setting('encore.role')) THEN
        BEGIN
            EXECUTE format('CREATE ROLE %I NOLOGIN', current_setting('encore.role'));
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL; -- made meanwhile by a migration of another database
        END;
    END IF;
END $$`

// handOver gives the migrator the database, schema public and every object
// in it that no extension owns, then grants the other roles what 0003 and
// 0008 grant them, on behalf of the migrator for tables made later.
const handOver = `DO $$
DECLARE
    o record;
BEGIN
    EXECUTE format('ALTER DATABASE %I OWNER TO encore_migrator', current_database());
    ALTER SCHEMA public OWNER TO encore_migrator;
    FOR o IN
        SELECT c.oid::regclass AS name, c.relkind FROM pg_class c
        WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
          AND pg_get_userbyid(c.relowner) <> 'encore_migrator'
          AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                          AND d.deptype IN ('a', 'i', 'e')) -- owned sequences follow their table
    LOOP
        EXECUTE format('ALTER %s %s OWNER TO encore_migrator',
            CASE o.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'S' THEN 'SEQUENCE'
                           WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END, o.name);
    END LOOP;
    FOR o IN
        SELECT p.oid::regprocedure AS name FROM pg_proc p
        WHERE p.pronamespace = 'public'::regnamespace AND pg_get_userbyid(p.proowner) <> 'encore_migrator'
          AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                          AND d.deptype = 'e')
    LOOP
        EXECUTE format('ALTER ROUTINE %s OWNER TO encore_migrator', o.name);
    END LOOP;

    REVOKE CREATE ON SCHEMA public FROM PUBLIC;
    EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC', current_database());
    GRANT USAGE ON SCHEMA public TO encore_app, encore_reader;
    GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO encore_app;
    GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO encore_app;
    IF to_regclass('schema_migrations') IS NOT NULL THEN
        REVOKE INSERT, UPDATE, DELETE ON schema_migrations FROM encore_app;
    END IF;
    -- The admin audit log is append-only for the application (0011).
    IF to_regclass('admin_audit') IS NOT NULL THEN
        REVOKE UPDATE, DELETE, TRUNCATE ON admin_audit FROM encore_app;
    END IF;
    ALTER DEFAULT PRIVILEGES FOR ROLE encore_migrator IN SCHEMA public
        GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO encore_app;
    ALTER DEFAULT PRIVILEGES FOR ROLE encore_migrator IN SCHEMA public
        GRANT USAGE, SELECT ON SEQUENCES TO encore_app;
    -- The API's browse pool falls back to SET ROLE encore_reader on its own
    -- login when ENCORE_READER_DATABASE_URL is empty.
    GRANT encore_reader TO encore_app;
END $$`

// scramVerifier is the SCRAM-SHA-256 verifier PostgreSQL stores for password
// (RFC 5802/7677, PostgreSQL's format): what ALTER ROLE ... PASSWORD accepts
// in place of the password itself. Passwords are used as given (no SASLprep),
// which is what PostgreSQL does for ASCII ones, such as generated ones.
func scramVerifier(password string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	return scramVerifierWith(password, salt, scramIterations)
}

func scramVerifierWith(password string, salt []byte, iterations int) (string, error) {
	salted, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		return "", err
	}
	mac := func(key []byte, msg string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	stored := sha256.Sum256(mac(salted, "Client Key"))
	server := mac(salted, "Server Key")
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iterations, b64(salt), b64(stored[:]), b64(server)), nil
}
