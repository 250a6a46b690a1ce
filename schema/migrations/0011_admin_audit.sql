-- Every organiser, support and operator action leaves one row: who did what
-- to which object, when, and the object before and after. Rows are only ever
-- inserted; the application login may not change or remove them.
CREATE TABLE admin_audit (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at        timestamptz NOT NULL DEFAULT now(),
    actor     text NOT NULL CHECK (actor <> ''),
    org_id    text NOT NULL DEFAULT '',
    action    text NOT NULL CHECK (action <> ''),
    target    text NOT NULL DEFAULT '',
    reason    text NOT NULL DEFAULT '',
    before    jsonb,
    after     jsonb
);
CREATE INDEX admin_audit_target ON admin_audit (target, id DESC);
CREATE INDEX admin_audit_actor ON admin_audit (actor, id DESC);

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'encore_app') THEN
        REVOKE UPDATE, DELETE, TRUNCATE ON admin_audit FROM encore_app;
    END IF;
END
$$;
