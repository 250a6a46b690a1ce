package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/demo"
	"github.com/encore-tickets/encore/dev/drills"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/system"
)

func newDrillCmd() *cobra.Command {
	t := drills.Target{API: "http://127.0.0.1:8080", Admin: "http://127.0.0.1:9090", PSP: "http://127.0.0.1:12111",
		Metered: demo.FlashSaleID, Unmetered: demo.DemoNightID, OutboxAlertAfter: 30 * time.Second, Limit: 2 * time.Minute}
	var jsonOut string
	names := ""
	for _, d := range drills.All {
		names += fmt.Sprintf("\n  %-17s %s", d.Name, d.About)
	}
	cmd := &cobra.Command{
		Use:   "drill <name|all>",
		Short: "Break one part of a running development stack and judge how it recovers",
		Long: `Plays a failure against a running encore dev (loopback only) through its own
switches (/drill/ on its admin listener, the payment sandbox's fault switch),
drives fans through the real edge meanwhile, puts the part back and measures
the time to recover. Each drill prints a verdict; afterwards the inventory
audit and the payment reconciliation must show nothing new (no seat sold
twice, no capture without its booking). Exits 1 when a drill fails.

Drills:` + names,
		Example: `  encore drill redis-down
  encore drill all --json drills.json`,
		Args: cobra.ExactArgs(1),
		RunE: action(func(cmd *cobra.Command, args []string, cfg config.Config) error {
			list := drills.All
			if args[0] != "all" {
				d, ok := drills.Find(args[0])
				if !ok {
					return fmt.Errorf("no drill %q; one of:%s", args[0], names)
				}
				list = []drills.Drill{d}
			}
			if err := t.Loopback(); err != nil {
				return err
			}
			if t.DrillToken == "" {
				// The running encore dev wrote it; same data folder, same user.
				raw, err := os.ReadFile(system.DataPath(cfg, drillTokenFile))
				if err != nil {
					return fmt.Errorf("the drill token: %w (is encore dev running with this ENCORE_DATA_DIR? or pass --token)", err)
				}
				t.DrillToken = strings.TrimSpace(string(raw))
			}
			ctx := cmd.Context()
			pool, done, err := openDatabase(ctx, cfg)
			if err != nil {
				return fmt.Errorf("the stack's database: %w", err)
			}
			defer done()
			books := &activities.Booking{Store: store.New(pool, store.Options{}), Payments: system.Payments(cfg),
				Log: system.Logger(cfg, os.Stderr)}
			count := func(ctx context.Context) (int, int, error) {
				rep, err := books.Store.Holds.Audit(ctx, "", cfg.SweepLagAllowance)
				if err != nil {
					return 0, 0, err
				}
				rec, err := (*activities.Reconciliation)(books).ReconcilePayments(ctx, 24*time.Hour)
				return int(rep.SeatsWithManyOwners), len(rec.Mismatches), err
			}
			// What was broken before the drills is not theirs.
			baseDoubles, baseUnmatched, err := count(ctx)
			if err != nil {
				return err
			}
			t.Audit = func(ctx context.Context) (int, int, error) {
				d, u, err := count(ctx)
				return d - baseDoubles, u - baseUnmatched, err
			}
			var results []drills.Result
			failed := false
			for _, d := range list {
				fmt.Fprintf(cmd.ErrOrStderr(), "drill %s: %s ...\n", d.Name, d.About)
				r, err := t.Run(ctx, d)
				if err != nil {
					return err
				}
				results = append(results, r)
				verdict := "PASS"
				if !r.Passed {
					verdict, failed = "FAIL", true
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s: recovered in %.1fs\n", verdict, d.Name, r.RecoverySeconds)
				for _, o := range r.Observed {
					fmt.Fprintf(cmd.OutOrStdout(), "    %s\n", o)
				}
				if r.Failure != "" {
					fmt.Fprintf(cmd.OutOrStdout(), "    failed: %s\n", r.Failure)
				}
			}
			if jsonOut != "" {
				b, _ := json.MarshalIndent(results, "", "  ")
				if err := os.WriteFile(jsonOut, append(b, '\n'), 0o644); err != nil {
					return err
				}
			}
			if failed {
				return exitCode(1)
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringVar(&t.API, "api", t.API, "the stack's fan API (loopback only)")
	f.StringVar(&t.Admin, "admin", t.Admin, "the stack's admin listener, with /drill/ (loopback only)")
	f.StringVar(&t.PSP, "psp", t.PSP, "the payment sandbox (loopback only)")
	f.StringVar(&t.DrillToken, "token", "", "the stack's drill token (default: read from ENCORE_DATA_DIR/"+drillTokenFile+", where encore dev writes it)")
	f.StringVar(&t.Metered, "metered", t.Metered, "a metered event on sale")
	f.StringVar(&t.Unmetered, "event", t.Unmetered, "an unmetered event on sale, with seats left")
	f.DurationVar(&t.OutboxAlertAfter, "outbox-alert", t.OutboxAlertAfter, "the outbox-age alert's threshold (deploy/prometheus/rules/alerts.yml)")
	f.DurationVar(&t.Limit, "limit", t.Limit, "longest recovery a drill waits for")
	f.StringVar(&jsonOut, "json", "", "also write the verdicts to this file as JSON")
	return cmd
}
