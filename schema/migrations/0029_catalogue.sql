-- The organiser's catalogue: ticket types with their own price per seat
-- category (Adult, Child, Student...), a service fee per ticket, the
-- organisation's legal and tax settings, invoices with gapless numbers per
-- organisation and year, and event series.
--
-- An event without ticket types sells as it always did: one type whose
-- prices are the event's (event_prices, the seats' base prices). An event
-- with types lists them in order; its first type's prices are the event's
-- prices, so a hold naming no type is priced as before.
CREATE TABLE ticket_types (
    event_id       text NOT NULL REFERENCES events (id),
    id             text NOT NULL CHECK (id ~ '^[a-z0-9][a-z0-9_-]{0,39}$'),
    name           text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    position       int NOT NULL,
    max_per_order  int CHECK (max_per_order BETWEEN 1 AND 100),
    requires       text, -- a question's ID the buyer must answer for this type
    PRIMARY KEY (event_id, id),
    UNIQUE (event_id, position)
);
CREATE TABLE ticket_type_prices (
    event_id  text NOT NULL,
    type_id   text NOT NULL,
    category  text NOT NULL,
    amount    bigint NOT NULL CHECK (amount >= 0),
    PRIMARY KEY (event_id, type_id, category),
    FOREIGN KEY (event_id, type_id) REFERENCES ticket_types (event_id, id) ON DELETE CASCADE
);

ALTER TABLE events ADD COLUMN service_fee bigint NOT NULL DEFAULT 0 CHECK (service_fee >= 0);

-- A line's type and its service fee (per line: the fee per ticket times the
-- quantity), frozen at hold time like its price.
ALTER TABLE reservation_items
    ADD COLUMN ticket_type  text,
    ADD COLUMN fee          bigint NOT NULL DEFAULT 0 CHECK (fee >= 0);
-- A reservation's fees and tax, frozen at hold time: total is what is
-- charged (lines, fees, and tax when prices exclude it).
ALTER TABLE reservations
    ADD COLUMN fees                bigint NOT NULL DEFAULT 0 CHECK (fees >= 0),
    ADD COLUMN tax                 bigint NOT NULL DEFAULT 0 CHECK (tax >= 0),
    ADD COLUMN tax_rate_bp         int NOT NULL DEFAULT 0 CHECK (tax_rate_bp BETWEEN 0 AND 10000),
    ADD COLUMN prices_include_tax  boolean NOT NULL DEFAULT true;

-- An organisation's legal and tax settings, for its invoices.
CREATE TABLE organisations (
    id                  text PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 100),
    legal_name          text NOT NULL DEFAULT '' CHECK (length(legal_name) <= 200),
    address             text NOT NULL DEFAULT '' CHECK (length(address) <= 500),
    vat_id              text NOT NULL DEFAULT '' CHECK (length(vat_id) <= 40),
    tax_rate_bp         int NOT NULL DEFAULT 0 CHECK (tax_rate_bp BETWEEN 0 AND 10000),
    prices_include_tax  boolean NOT NULL DEFAULT true,
    invoice_prefix      text NOT NULL DEFAULT 'INV' CHECK (invoice_prefix ~ '^[A-Z0-9]{1,12}$'),
    updated_at          timestamptz NOT NULL DEFAULT now()
);

-- Invoice numbers: one counter per organisation and year, taken under its
-- row lock in the transaction that writes the invoice, so a number is used
-- exactly once and a rolled-back invoice gives it back (no gaps).
CREATE TABLE invoice_counters (
    org_id  text NOT NULL,
    year    int NOT NULL,
    last    bigint NOT NULL DEFAULT 0 CHECK (last >= 0),
    PRIMARY KEY (org_id, year)
);
CREATE TABLE invoices (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    org_id          text NOT NULL,
    year            int NOT NULL,
    seq             bigint NOT NULL CHECK (seq > 0),
    number          text NOT NULL,
    kind            text NOT NULL CHECK (kind IN ('INVOICE', 'CREDIT_NOTE')),
    reservation_id  uuid NOT NULL REFERENCES reservations (id),
    issued_at       timestamptz NOT NULL DEFAULT now(),
    currency        char(3) NOT NULL,
    net             bigint NOT NULL,
    tax             bigint NOT NULL,
    fees            bigint NOT NULL,
    total           bigint NOT NULL,
    tax_rate_bp     int NOT NULL,
    seller          jsonb NOT NULL, -- the organisation's legal data as it was
    lines           jsonb NOT NULL,
    UNIQUE (org_id, year, seq),
    UNIQUE (org_id, number),
    UNIQUE (reservation_id, kind)
);

-- Event series: one event per date, sharing venue, prices and settings.
CREATE TABLE series (
    id          text PRIMARY KEY CHECK (id ~ '^ser_[A-Za-z0-9_-]{1,60}$'),
    org_id      text NOT NULL,
    title       text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE events ADD COLUMN series_id text REFERENCES series (id);
CREATE INDEX events_series ON events (series_id, starts_at) WHERE series_id IS NOT NULL;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'encore_reader') THEN
        GRANT SELECT ON ticket_types, ticket_type_prices, organisations, invoices, series TO encore_reader;
    END IF;
END $$;
