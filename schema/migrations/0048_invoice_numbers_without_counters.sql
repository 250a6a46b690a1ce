-- Invoice numbers are now taken as the series' highest plus one under a
-- transaction advisory lock on the organisation's year (store/invoices.go):
-- the counter row was one more row write every invoice, and its value was
-- always the series' highest (both were written in one transaction).
DROP TABLE invoice_counters;
