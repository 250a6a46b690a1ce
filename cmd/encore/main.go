// Command encore is every Encore process in one binary:
//
//	encore dev       the whole system in one process, with PostgreSQL, Redis,
//	                 Temporal and its Web UI provided for you, and demo data
//	encore api       the fan API (production: infra from the environment)
//	encore worker    the Temporal worker and background loops
//	encore migrate   apply migrations and print the schema version
//	encore seed      apply migrations and seed the demo events
//	encore audit     check the inventory invariants; exit 1 on a violation
//	encore manifest  export an event's encrypted, signed ticket manifest for the gate
//	encore gate      the venue gate: import a manifest, serve scans (SQLite ledger)
//	encore psp       the Stripe-compatible payment sandbox (dev starts it too)
//	encore keys generate  print fresh production secrets as an env file
//	encore db logins      create the least-privilege database logins
//	encore testinfra -- CMD...  run CMD with private test PostgreSQL and Redis
//	encore config    print the configuration table
//
// encore <command> --help describes a command and its flags. The command
// tree is in commands.go. Configuration is read from ENCORE_* environment
// variables; see README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
