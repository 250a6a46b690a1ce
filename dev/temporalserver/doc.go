// Package temporalserver runs a Temporal server inside the Encore process,
// persisting to PostgreSQL, with the Temporal Web UI next to it. `encore dev`
// uses it as the development cluster and integration tests use StartForTest;
// production-like runs use a real Temporal cluster (docker-compose.temporal.yml)
// and only change the frontend address the workers dial.
//
// Start does, in order:
//
//  1. Creates the main and visibility databases if missing.
//  2. Brings both schemas to the version this server release expects with the
//     server's own schema tool (go.temporal.io/server/tools/sql and
//     tools/common/schema) and the schemas embedded in the server module,
//     "postgresql/v12/temporal" and "postgresql/v12/visibility". An empty
//     database gets setup-schema with the embedded schema.sql at the expected
//     version (what Temporal's own persistence tests load; 0.1-0.3 s, where
//     replaying every migration from 0.0 takes about 3 s here, mostly the
//     visibility history). Then update-schema runs on every start: a no-op on
//     a current database, the upgrade after a server upgrade. So a restart
//     reuses the data. The tool's tasks are called directly instead of through
//     RunTool, because RunTool exits the process on failure (or, with
//     --quiet, hides the error) and logs at info level. A PostgreSQL advisory
//     lock serialises concurrent set-ups of the same databases.
//  3. If the namespace does not exist yet, writes it (retention, custom search
//     attributes) straight into the main database before the server starts,
//     as temporaltest and the Temporal CLI dev server do: every service loads
//     it at start, so nothing waits for namespace caches to notice a
//     registration (about 1.5 s saved per fresh start).
//  4. Starts frontend, history, matching and worker in this process with
//     temporal.NewServer, on static loopback hosts (no gossip ring to join:
//     one node knows all its peers) and the postgres12_pgx persistence plugin.
//  5. Through the frontend and operator APIs, registers the namespace and adds
//     custom search attributes that are still missing (a namespace created
//     earlier, a search attribute added to Config later), then waits until the
//     frontend resolves them.
//  6. Keeps the visibility table's indexes on pre-allocated custom search
//     attribute columns to the columns some namespace maps (visibility.go):
//     drops the others' (21 of 28 for Encore's seven attributes), builds a
//     newly mapped column's, and puts them all back before a schema upgrade.
//  7. Serves the Web UI (github.com/temporalio/ui-server/v2) on UIAddress.
//
// Measured on the 2-core build machine: a start on new databases takes
// about 0.5-1.2 s (most of it the two CREATE DATABASE and the schemas; up to
// 2.4 s while other builds load the machine), a start on existing databases
// about 0.2 s (0.5 s under load), or about 1.3 s when a search attribute was
// added to Config since (step 5 waits for the namespace cache refresh), Stop
// about 0.05-0.1 s.
//
// # Tuning for one machine
//
// PostgreSQL, not SQLite. Measured on the 2-core build machine, a trivial
// workflow runs at about 100-120 starts a second on PostgreSQL with the
// settings below and about 12 a second on SQLite (file, WAL): SQLite
// serialises every write of every shard behind one lock, PostgreSQL lets
// shards commit in parallel. PostgreSQL is already running for the booking
// data, the Temporal data survives restarts, and the schema is the one a
// production cluster uses. Temporal gets its own two databases, never tables
// in the booking database.
//
// One task-queue partition (matching.numTaskqueueReadPartitions and
// matching.numTaskqueueWritePartitions = 1). The default of four partitions
// spreads a busy queue across matching hosts; with one host it only adds
// forwarding between partitions and polls that land on empty ones. Measured:
// about 55-70 workflows a second with defaults, about 100-120 with one
// partition and eager start.
//
// Eager workflow start (system.enableEagerWorkflowStart). When the starter
// passes EnableEagerStart and a worker for the task queue lives in the same
// process, the first workflow task comes back in the start response instead
// of going through matching: one round trip and one task dispatch fewer per
// booking. Eager activity execution stays on for the same reason.
//
// Four history shards (NumHistoryShards, 4 by default). A shard is the unit
// of history concurrency and each one costs a shard owner, queues and timers.
// Measured against encore dev on the 2-core machine (BENCHMARKS.md, "Saga
// capacity: embedded Temporal tuning"), trivial workflows: 8 shards cost
// about 40% more server CPU per workflow than 4 (the encore process and
// PostgreSQL together) and ran no faster; 1 shard ran at about two thirds of
// the rate of 4; 2 were within noise of 4, for trivial workflows and for
// bookings. The count is written into the database
// at first start and cannot change afterwards: a later Start with another
// value logs a warning and keeps the stored one.
//
// Measured the same way and not kept, each within noise of the settings
// above: persistence QPS limits ten times the defaults (the defaults, 2,000
// to 9,000 a second, are far above what two cores reach), matching's default
// four task-queue partitions instead of one for bookings (the one partition
// stays, as measured earlier), history.enableTransitionHistory off, GOGC=200,
// and commit_delay=1000 with commit_siblings=2 on Temporal's connections.
// synchronous_commit=off on Temporal's connections (an upper bound of what
// WAL flushes cost, not a candidate: it loses acknowledged workflow state on
// a crash) gained about 15% on trivial workflows (median of three runs) and
// nothing measurable on bookings: the CPU, not the WAL flush, is the limit.
//
// Also set: Workflow Update and its async-accepted stage on (checkout is an
// Update; both default to on in v1.32.1), no shutdown drain (nothing
// load-balances in front of this server, so Stop is quick), and a one-second
// namespace cache refresh so namespace and search-attribute changes reach
// every service quickly. Update-With-Start has no switch in v1.32.1: the
// frontend.enableExecuteMultiOperation key is gone and the API is always on.
//
// Turned off: the parent-close-policy system worker and the task-queue and
// history scanners. The worker service starts their SDK workers and never
// stops them, so after Stop they would keep polling a dead frontend (and
// logging) for the life of the process; on one machine history applies parent
// close policies itself when that worker is off, and the scanners only
// garbage-collect leftovers. Config.DynamicConfig overrides any value by key.
//
// Logs: the server logs a great deal at info level; everything below warn is
// dropped before it reaches Config.Logger. The server also derives a logger
// with tags for each request and task; those tags are converted only when a
// record is logged (converting them eagerly cost 4-12% of the encore
// process's CPU per trivial workflow, measured as above).
package temporalserver
