-- The organiser's resale policy of an event: whether fans may resell their
-- tickets to each other on Encore, at most at what share of face value
-- (basis points), what fee the platform keeps (basis points of the resale
-- price), and how long before the show listings close.
ALTER TABLE events
    ADD COLUMN resale_enabled         boolean NOT NULL DEFAULT false,
    ADD COLUMN resale_max_price_bp    int NOT NULL DEFAULT 10000 CHECK (resale_max_price_bp BETWEEN 0 AND 100000),
    ADD COLUMN resale_fee_bp          int NOT NULL DEFAULT 500 CHECK (resale_fee_bp BETWEEN 0 AND 5000),
    ADD COLUMN resale_closes_minutes  int NOT NULL DEFAULT 60 CHECK (resale_closes_minutes BETWEEN 0 AND 525600);
