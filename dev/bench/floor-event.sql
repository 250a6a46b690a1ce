-- A copy of the demo stadium (evt_demo_stadium) for api/testdata/hold.sql on
-- an `encore dev` cluster: event evt_floor, sections sec_floor0 .. sec_floor9
-- (the stadium's a .. j), seats <section>-<row>-<number>, every seat
-- available. pgbench then runs a hold's SQL without touching the stadium
-- that the HTTP benchmark sells. Run once on a fresh stack (used by
-- holds-vs-pgbench.sh).
BEGIN;
INSERT INTO events
SELECT (jsonb_populate_record(NULL::events, to_jsonb(e) || jsonb_build_object('id', 'evt_floor', 'title', 'Floor copy'))).*
FROM events e WHERE e.id = 'evt_demo_stadium';

CREATE TEMP TABLE floor_sections ON COMMIT DROP AS
SELECT id AS stadium_id, 'sec_floor' || (row_number() OVER (ORDER BY id) - 1) AS floor_id
FROM sections WHERE event_id = 'evt_demo_stadium';

INSERT INTO sections
SELECT (jsonb_populate_record(NULL::sections, to_jsonb(s) || jsonb_build_object('id', f.floor_id, 'event_id', 'evt_floor'))).*
FROM sections s JOIN floor_sections f ON f.stadium_id = s.id;

INSERT INTO seats
SELECT (jsonb_populate_record(NULL::seats, to_jsonb(st) || jsonb_build_object(
    'id', f.floor_id || substr(st.id, length(st.section_id) + 1), 'event_id', 'evt_floor', 'section_id', f.floor_id,
    'status', 'AVAILABLE', 'reservation_id', NULL, 'version', 0))).*
FROM seats st JOIN floor_sections f ON f.stadium_id = st.section_id;
COMMIT;
ANALYZE events;
ANALYZE sections;
ANALYZE seats;
