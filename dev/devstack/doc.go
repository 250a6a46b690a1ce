// Package devstack finds, installs, initialises, starts and stops a local
// PostgreSQL and Redis for development (`encore dev`) and for tests.
//
// EnsurePostgres and EnsureRedis each return a Service in this order of
// preference:
//
//  1. the preferred URL (for example ENCORE_DATABASE_URL or ENCORE_REDIS_URL),
//     if it answers within a few seconds;
//  2. a server already answering on the loopback port of Options (started by
//     an earlier run, by another test binary, or by hand), reused as it is;
//  3. a server this package starts from a data folder under Options.Dir:
//     Dir/postgres (initialised once with initdb: trust authentication on
//     loopback, superuser "postgres", UTF8) and Dir/redis (append-only file
//     unless Options.Fast).
//
// Missing server programs are installed with apt-get when Options.AllowInstall
// is set and the process runs as root on Debian or Ubuntu; otherwise the
// error (which wraps ErrNotInstalled) says what to install.
//
// PostgreSQL refuses to run as root. When the process runs as root, initdb
// and pg_ctl run as the "postgres" system user (through runuser) on a data
// folder it owns. If that user cannot reach Dir (a project under a private
// home folder, for example), the cluster lives in /var/tmp/encore-<hash of
// Dir>/postgres instead, and the log says so.
//
// Concurrency: calls for the same Dir, from goroutines or from separate
// processes (several `go test` binaries), are serialised with flock(2) on
// Dir/postgres.lock and Dir/redis.lock, and calls for the same port (even
// with different Dirs) on a lock file of that port in the temporary folder,
// so exactly one caller initialises and starts a server and the others
// reuse it. apt-get runs under a machine-wide lock and waits for a dpkg
// lock held by someone else.
//
// Stopping: Service.Stop stops only a server that this Service started
// (Started is true), and even then leaves it running while another Service,
// in this process or another, still uses it: every Service of a local port
// holds a shared lock on a lock file of that port until its Stop. A server
// left running is simply reused by the next Ensure call. Shutdown stops the
// servers whose data lives under Dir, whoever started them.
//
// For tests of Redis beyond one server, StartRedisCluster starts a Redis
// Cluster (three masters with a replica each, cluster mode, joined with
// redis-cli --cluster create) and StartRedisSentinel a master, a replica and
// a sentinel, all as children of the calling process on free loopback ports,
// without persistence, killed (SIGKILL, as a crash) by their Kill and Close.
//
// Tests usually pass Dir: ProjectDir(".encore", "test") (absolute, since
// `go test` runs each package in its own folder) with ports of their own,
// set Options.Fast (no fsync, no Redis persistence), and leave the servers
// running for the next run.
package devstack
