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
//	encore testinfra -- CMD...  run CMD with private test PostgreSQL and Redis
//
// Configuration is read from ENCORE_* environment variables; see README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/encore-tickets/encore/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	var exit exitCode
	if errors.As(err, &exit) {
		os.Exit(int(exit))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "encore:", err)
		os.Exit(1)
	}
}

// exitCode ends the process with a code and no further message.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit %d", int(e)) }

const usage = `usage: encore <command>

commands:
  dev        run the whole system in one process (PostgreSQL, Redis, Temporal and its UI provided)
  api        run the fan API
  worker     run the Temporal worker and background loops
  migrate    apply migrations and print the schema version
  seed       apply migrations and seed the demo events
  audit      check inventory invariants (exit 1 on any violation)
  manifest   export --event <id> --out <file>: the encrypted, signed ticket manifest for the gate
  gate       --manifest <file> --addr <host:port>: the venue gate (also import, sync, status)
  psp        run the Stripe-compatible payment sandbox (also started by dev)
  testinfra  -- CMD...: run CMD with private test PostgreSQL and Redis
  config     print the configuration table`

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, usage)
		return exitCode(2)
	}
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	switch args[0] {
	case "dev":
		return runDev(ctx, cfg)
	case "api":
		return runAPI(ctx, cfg)
	case "worker":
		return runWorker(ctx, cfg)
	case "migrate":
		return runMigrate(ctx, cfg, false)
	case "seed":
		return runMigrate(ctx, cfg, true)
	case "audit":
		return runAudit(ctx, cfg, args[1:])
	case "testinfra":
		return runTestInfra(ctx, cfg, args[1:])
	case "psp":
		return runPSP(ctx, cfg)
	case "gate":
		return runGate(ctx, cfg, args[1:])
	case "manifest":
		return runManifest(ctx, cfg, args[1:])
	case "config":
		fmt.Print(config.Table())
		return nil
	case "help", "-h", "--help":
		fmt.Println(usage)
		return nil
	}
	fmt.Fprintf(os.Stderr, "encore: unknown command %q\n%s\n", args[0], usage)
	return exitCode(2)
}
