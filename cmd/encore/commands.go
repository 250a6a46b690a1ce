package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/encore-tickets/encore/config"
)

// exitCode ends the process with a code and no further message: the command
// has already said what went wrong (audit's report, testinfra's child).
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// runError marks an error from a command's own work (exit 1). Every other
// error cobra returns is about the command line — an unknown command or flag,
// a missing required flag, extra arguments — and exits 2 with usage, so a
// new kind of command-line mistake needs no classification here.
type runError struct{ err error }

func (e runError) Error() string { return e.err.Error() }
func (e runError) Unwrap() error { return e.err }

// execute runs the command line args and returns the process's exit code.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return executeCmd(ctx, newRootCmd(), args, stdout, stderr)
}

// executeCmd is execute on a given command tree, so tests can swap a
// command's work for a probe.
func executeCmd(ctx context.Context, root *cobra.Command, args []string, stdout, stderr io.Writer) int {
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if cmd == nil {
		cmd = root
	}
	var exit exitCode
	var run runError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return int(exit)
	case errors.As(err, &run):
		fmt.Fprintln(stderr, "encore:", err)
		return 1
	}
	fmt.Fprintf(stderr, "encore: %v\n\n%s", err, cmd.UsageString())
	return 2
}

// action adapts a command's work to cobra. The configuration is loaded here,
// once the command line has parsed, so that --help and a command-line
// mistake never depend on a valid environment.
func action(fn func(cmd *cobra.Command, args []string, cfg config.Config) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		cfg, err := config.Load()
		if err != nil {
			return runError{err}
		}
		if err := fn(cmd, args, cfg); err != nil {
			return runError{err}
		}
		return nil
	}
}

// secured is action for a production process: before any work, it refuses
// to run on a secret the command uses that is unsafe (see
// config.Config.CheckSecrets), unless ENCORE_ENV=development.
func secured(command string, fn func(cmd *cobra.Command, args []string, cfg config.Config) error) func(*cobra.Command, []string) error {
	return action(func(cmd *cobra.Command, args []string, cfg config.Config) error {
		if err := cfg.CheckSecrets(command); err != nil {
			return err
		}
		if err := cfg.CheckDeployment(command); err != nil {
			return err
		}
		return fn(cmd, args, cfg)
	})
}

// needCommand is the run of a command that only groups others: called bare it
// is a command-line mistake (exit 2), as it was before cobra.
func needCommand(cmd *cobra.Command, _ []string) error {
	return fmt.Errorf("missing command for %q", cmd.CommandPath())
}

// required marks flags that a command cannot run without; cobra then rejects
// the command line before any work starts.
func required(cmd *cobra.Command, names ...string) {
	for _, n := range names {
		if err := cmd.MarkFlagRequired(n); err != nil {
			panic(err) // a flag that was never declared: a programming error
		}
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "encore",
		Short: "Every Encore process in one binary",
		Long: `Encore is a flash-sale ticket booking system; this binary runs every part of it.

encore dev runs the whole system in one process with PostgreSQL, Redis, Temporal
and its Web UI provided; encore api and encore worker are the production
processes. Configuration comes from ENCORE_* environment variables (encore config
prints them all); it is read after the command line, so --help always works.`,
		Args:          nil, // cobra's default for a root: an unknown first word is an unknown command
		RunE:          needCommand,
		SilenceErrors: true, // execute prints errors, with the exit code it chooses
		SilenceUsage:  true,
		CompletionOptions: cobra.CompletionOptions{
			DisableDefaultCmd: true, // the command set stays the one documented in README.md
		},
	}
	root.AddCommand(
		newDevCmd(),
		newAPICmd(),
		newWorkerCmd(),
		newMigrateCmd(),
		newSeedCmd(),
		newAuditCmd(),
		newHotelCmd(),
		newManifestCmd(),
		newGateCmd(),
		newVenueCmd(),
		newEventCmd(),
		newSalesCmd(),
		newRehearseCmd(),
		newDrillCmd(),
		newPSPCmd(),
		newProbeCmd(),
		newTemporalCmd(),
		newKeysCmd(),
		newDBCmd(),
		newTestInfraCmd(),
		newConfigCmd(),
	)
	return root
}

func newDevCmd() *cobra.Command {
	var split bool
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the whole system in one process (PostgreSQL, Redis, Temporal and its UI provided)",
		Long: `Runs the fan API, the Temporal worker, the background loops and the payment
sandbox in one process, with demo data seeded.

PostgreSQL and Redis come from ENCORE_DATABASE_URL and ENCORE_REDIS_URL, else
private ones are started (installed when missing) under ENCORE_DATA_DIR.
Temporal comes from ENCORE_TEMPORAL_ADDRESS, else a server and its Web UI are
embedded. Stops on Ctrl-C, stopping what it started.

With --split, the deployed topology instead, each part its own process: the
Temporal server and its Web UI, the payment sandbox, two encore worker, two
encore api behind a balancer on the same fan address, private PostgreSQL
(with a streaming replica for the browse plane) and Redis, and Mailpit.
Each part's pid and log are listed; Ctrl-C stops them all.`,
		Args: cobra.NoArgs,
		RunE: action(func(cmd *cobra.Command, _ []string, cfg config.Config) error {
			cfg.Env = config.Development // dev is the development stack, whatever the environment says
			if split {
				bin, err := os.Executable()
				if err != nil {
					return err
				}
				return runSplit(cmd.Context(), devConfig(cfg, os.LookupEnv), bin, cmd.OutOrStdout(), nil)
			}
			return runDev(cmd.Context(), devConfig(cfg, os.LookupEnv))
		}),
	}
	cmd.Flags().BoolVar(&split, "split", false, "run the deployed topology: each part its own process")
	return cmd
}

func newAPICmd() *cobra.Command {
	return newProcessCmd("api", "Run the fan API",
		`Runs the fan API on ENCORE_HTTP_ADDR: the production process, with PostgreSQL,
Redis and Temporal from ENCORE_DATABASE_URL, ENCORE_REDIS_URL and
ENCORE_TEMPORAL_ADDRESS (see docker-compose.temporal.yml).`, runAPI)
}

func newWorkerCmd() *cobra.Command {
	return newProcessCmd("worker", "Run the Temporal worker and background loops",
		`Runs the Temporal worker, the expiry sweeper, the outbox relay and the
waiting-room admitter: the production process, with infrastructure from the
environment like encore api.`, runWorker)
}

// newProcessCmd is the command of a production process: it takes no
// arguments, and its configuration passes secured's checks under the
// command's own name before run starts.
func newProcessCmd(use, short, long string, run func(context.Context, config.Config) error) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.NoArgs,
		RunE: secured(use, func(cmd *cobra.Command, _ []string, cfg config.Config) error {
			return run(cmd.Context(), cfg)
		}),
	}
}

func newMigrateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply migrations and print the schema version",
		Long: `Applies the embedded migrations to ENCORE_DATABASE_URL, or to encore dev's
private cluster when none is configured, and prints the schema version.`,
		Args: cobra.NoArgs,
		RunE: action(func(cmd *cobra.Command, _ []string, cfg config.Config) error {
			return runMigrate(cmd.Context(), cfg, false)
		}),
	}
}

func newSeedCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "seed",
		Short: "Apply migrations and seed the demo events",
		Long: `Applies the embedded migrations like encore migrate, then seeds the demo
events.`,
		Args: cobra.NoArgs,
		RunE: action(func(cmd *cobra.Command, _ []string, cfg config.Config) error {
			return runMigrate(cmd.Context(), cfg, true)
		}),
	}
}

func newAuditCmd() *cobra.Command {
	var event string
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Check inventory invariants (exit 1 on any violation)",
		Long: `Counts seats with more than one live owner, SOLD seats without a PAID
reservation, HELD seats past expiry (beyond ENCORE_SWEEP_LAG_ALLOWANCE),
miscounted general-admission sections and room-nights, bookings with more
tickets or more revoked tickets than their sale issued, tickets revoked twice,
and resale listings sold twice, unbalanced or with two holders; prints the
report and exits 1 on any violation. The nightly AuditInventory schedule runs
the same checks.`,
		Args: cobra.NoArgs,
		RunE: action(func(cmd *cobra.Command, _ []string, cfg config.Config) error {
			return runAudit(cmd.Context(), cfg, event)
		}),
	}
	cmd.Flags().StringVar(&event, "event", "", "audit this event only (default: every event)")
	return cmd
}

func newManifestCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "manifest",
		Short: "Export or inspect an event's encrypted, signed ticket manifest for the gate",
		Long: `export writes the event's valid paid tickets with their QR secrets, encrypted
(ENCORE_MANIFEST_KEY) and signed (ENCORE_MANIFEST_SIGNING_SEED), for encore gate.
inspect verifies a file's signature and prints its header.`,
		Args: cobra.NoArgs,
		RunE: needCommand,
	}
	cmd.AddCommand(newManifestExportCmd(), newManifestInspectCmd())
	return cmd
}

func newManifestExportCmd() *cobra.Command {
	var o exportOptions
	cmd := &cobra.Command{
		Use:   "export --event <event_id> --out <file>",
		Short: "Write an event's ticket manifest to a file",
		Long: `Writes the event's valid paid tickets with their QR secrets, encrypted
(ENCORE_MANIFEST_KEY) and signed (ENCORE_MANIFEST_SIGNING_SEED), for encore gate.
--since <version> writes a delta from an earlier export: tickets issued and
revoked since. The file is replaced in one rename, so a gate never reads half.`,
		Args: cobra.NoArgs,
		RunE: secured("manifest", func(cmd *cobra.Command, _ []string, cfg config.Config) error {
			return runManifestExport(cmd.Context(), cfg, o)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.event, "event", "", "event ID (required)")
	f.StringVar(&o.out, "out", "", "file to write (required)")
	f.Int64Var(&o.since, "since", 0, "version of the export the gate holds: write a delta from it")
	f.StringVar(&o.expires, "expires", "", "expiry, RFC 3339 (default: the show's start + 12h)")
	required(cmd, "event", "out")
	return cmd
}

func newManifestInspectCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "inspect <file>",
		Short: "Verify a manifest's signature and print its header",
		Long: `Verifies a manifest file's signature with the key derived from
ENCORE_MANIFEST_SIGNING_SEED, prints its header, and fails when this machine's
ENCORE_MANIFEST_KEY could not open it.`,
		Args: cobra.ExactArgs(1),
		RunE: secured("manifest", func(_ *cobra.Command, args []string, cfg config.Config) error {
			return runManifestInspect(cfg, args[0])
		}),
	}
}

func newGateCmd() *cobra.Command {
	var o gateOptions
	cmd := &cobra.Command{
		Use:   "gate",
		Short: "Run the venue gate (also import, sync, status)",
		Long: `The venue gate: imports a manifest (encore manifest export) into a SQLite ledger
in WAL mode and serves the scanner app at /, GET /healthz, POST /v1/scan (a
scanner's device token, ENCORE_GATE_TOKENS or paired with encore gate pair,
required) and GET /metrics. Gates on
one host share one ledger file; if it fails, scans are refused. --offline runs
a scanner on its own copy that stays open without the LAN and may let a
ticket in twice; encore gate sync reports those double entries.`,
		Example: `  encore gate --manifest night.manifest --addr 127.0.0.1:8090
  encore gate import --manifest delta.manifest
  encore gate sync --from .encore/gate/offline.db
  encore gate status`,
		// "encore gate help" printed the usage before cobra; it still does.
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && args[0] == "help" {
				return nil
			}
			return cobra.NoArgs(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				return cmd.Help()
			}
			return secured("gate", func(cmd *cobra.Command, _ []string, cfg config.Config) error {
				return runGate(cmd.Context(), cfg, o)
			})(cmd, args)
		},
	}
	p := cmd.PersistentFlags()
	p.StringVar(&o.ledger.db, "db", "", "ledger file (default: ENCORE_DATA_DIR/gate/ledger.db; offline.db with --offline)")
	p.StringVar(&o.ledger.verifyKey, "verify-key", "", "Ed25519 public key (hex) that signs manifests (default: ENCORE_GATE_VERIFY_KEY; in development, from ENCORE_MANIFEST_SIGNING_SEED)")
	p.StringVar(&o.ledger.sync, "sync", "FULL", "SQLite synchronous level: FULL (an entry survives a power cut) or NORMAL")
	f := cmd.Flags()
	f.StringVar(&o.manifest, "manifest", "", "manifest to import before serving")
	f.StringVar(&o.addr, "addr", "", "listen address (default: ENCORE_GATE_ADDR, "+config.Default().GateAddr+" when unset)")
	f.StringVar(&o.event, "event", "", "event this gate admits (default: the manifest's)")
	f.BoolVar(&o.offline, "offline", false, "offline scanner on its own copy: stays open without the LAN, may admit a ticket twice")
	addGateDoorFlags(f, &o)
	cmd.AddCommand(newGateImportCmd(&o.ledger), newGateSyncCmd(&o.ledger), newGateStatusCmd(&o.ledger), newGateTokenCmd())
	cmd.AddCommand(gateDeviceCommands(&o.ledger)...)
	return cmd
}

func newGateImportCmd(ledger *ledgerOptions) *cobra.Command {
	return newGateFileCmd(ledger, "import --manifest <file>", "Import a manifest or delta into the ledger",
		`Imports a manifest or a delta (encore manifest export --since) into the ledger;
it applies while gates serve from the same ledger. An older version than the
ledger holds is refused.`,
		"manifest", "manifest file (required)", runGateImport)
}

func newGateSyncCmd(ledger *ledgerOptions) *cobra.Command {
	return newGateFileCmd(ledger, "sync --from <offline scanner's db>", "Merge an offline scanner's entries into the ledger and report double entries",
		`Pushes an offline scanner's entries (encore gate --offline) into the ledger,
records and prints every double entry (a ticket let in twice: ticket, seat,
both gates and times), and copies the ledger's entries back.`,
		"from", "the offline scanner's database (required)", runGateSync)
}

// newGateFileCmd is a gate subcommand on the ledger that reads one file,
// named by the required flag.
func newGateFileCmd(ledger *ledgerOptions, use, short, long, flag, usage string,
	run func(ctx context.Context, cfg config.Config, l ledgerOptions, file string) error,
) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.NoArgs,
		RunE: secured("gate", func(cmd *cobra.Command, _ []string, cfg config.Config) error {
			return run(cmd.Context(), cfg, *ledger, file)
		}),
	}
	cmd.Flags().StringVar(&file, flag, "", usage)
	required(cmd, flag)
	return cmd
}

func newGateStatusCmd(ledger *ledgerOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Print the ledger's manifests, entries and double entries",
		Long: `Prints each manifest the ledger holds (version, expiry, valid, revoked and
entered tickets) and how many double entries offline scanners reported.`,
		Args: cobra.NoArgs,
		RunE: secured("gate", func(cmd *cobra.Command, _ []string, cfg config.Config) error {
			return runGateStatus(cmd.Context(), cfg, *ledger)
		}),
	}
}

func newPSPCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "psp",
		Short: "Run the Stripe-compatible payment sandbox (also started by dev)",
		Long: `Runs the Stripe-compatible payment sandbox alone on ENCORE_PSP_ADDR, with state
under ENCORE_DATA_DIR and webhooks signed with ENCORE_STRIPE_WEBHOOK_SECRET to
the API on ENCORE_HTTP_ADDR. encore dev starts it too.`,
		Args: cobra.NoArgs,
		RunE: action(func(cmd *cobra.Command, _ []string, cfg config.Config) error {
			return runPSP(cmd.Context(), cfg)
		}),
	}
}

func newKeysCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Generate production secrets",
		Long: `generate prints a fresh value for every secret that has a development default,
the gate's verify key and the database login passwords, as an env file.`,
		Args: cobra.NoArgs,
		RunE: needCommand,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "generate",
		Short: "Print a fresh set of secrets as ENCORE_X=value lines",
		Long: `Prints a fresh random value (32 bytes, hex) for every secret whose default is
for development only, as ENCORE_X=value lines ready for an env file, a comment
for each value only the payment provider issues (take it from its dashboard),
ENCORE_GATE_VERIFY_KEY (the public key of the new manifest signing seed) and
the passwords encore db logins gives the database logins.`,
		Example: `  encore keys generate > encore.env && chmod 600 encore.env`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := runKeysGenerate(cmd.OutOrStdout()); err != nil {
				return runError{err}
			}
			return nil
		},
	})
	return cmd
}

func newDBCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "db",
		Short: "Database administration (logins)",
		Long: `logins creates or updates Encore's least-privilege database logins; run it once
as a superuser before encore migrate.`,
		Args: cobra.NoArgs,
		RunE: needCommand,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "logins",
		Short: "Create the encore_migrator, encore_app and encore_reader logins",
		Long: `Connects to ENCORE_DATABASE_URL as a superuser and creates (or updates) three
logins with the passwords in ENCORE_DB_MIGRATOR_PASSWORD, ENCORE_DB_APP_PASSWORD
and ENCORE_DB_READER_PASSWORD: encore_migrator owns the database and its schema
(encore migrate connects as it), encore_app reads and writes rows but changes no
schema (encore api and worker), encore_reader reads the browse tables
(ENCORE_READER_DATABASE_URL). Objects that already exist are handed to
encore_migrator, so it also converts a database migrated as a superuser. Safe to
run again, for example to change a password.`,
		Args: cobra.NoArgs,
		RunE: action(func(cmd *cobra.Command, _ []string, cfg config.Config) error {
			return runDBLogins(cmd.Context(), cfg)
		}),
	})
	return cmd
}

func newTestInfraCmd() *cobra.Command {
	var ramBase string
	cmd := &cobra.Command{
		Use:   "testinfra -- CMD [ARG...]",
		Short: "Run CMD with private test PostgreSQL and Redis",
		Long: `Starts private PostgreSQL and Redis for tests under ENCORE_DATA_DIR/test
(installing them when missing; or uses ENCORE_TEST_DATABASE_URL and
ENCORE_TEST_REDIS_URL when set), runs CMD with those two variables set, stops
what it started and exits with CMD's exit code. Everything after -- goes to
CMD unchanged. When --ram-dir is a tmpfs with 8 GiB free, the servers' data
and CMD's TMPDIR live there instead: the tests' data is thrown away, and a
disk only adds the kernel's writeback.`,
		Example: `  encore testinfra -- go test -race -timeout 80m ./...`,
		Args:    cobra.ArbitraryArgs,
		RunE: action(func(cmd *cobra.Command, args []string, cfg config.Config) error {
			return runTestInfra(cmd.Context(), cfg, ramBase, args)
		}),
	}
	cmd.Flags().StringVar(&ramBase, "ram-dir", "/dev/shm", "RAM disk (tmpfs) for the test servers' data and CMD's TMPDIR, used when it has 8 GiB free; empty keeps them under ENCORE_DATA_DIR/test and the usual TMPDIR")
	// Flag parsing stops at CMD even without --, so CMD's own flags (go test
	// -race) are never taken for encore's.
	cmd.Flags().SetInterspersed(false)
	return cmd
}

func newConfigCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "config",
		Short: "Print the configuration table",
		Long: `Prints every ENCORE_* environment variable with its default and meaning, as the
Markdown table in README.md. Fails, naming the variable, when one set in the
environment does not parse.`,
		Args: cobra.NoArgs,
		RunE: action(func(cmd *cobra.Command, _ []string, _ config.Config) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), config.Table())
			return err
		}),
	}
}
