package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/topology"
	"github.com/encore-tickets/encore/payments"
	"github.com/encore-tickets/encore/rehearsal"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/system"
)

// chaosParts are the parts encore rehearse --chaos can break.
var chaosParts = []string{"worker", "api", "temporal", "psp"}

// parseChaos reads --chaos: a comma-separated subset of chaosParts.
func parseChaos(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		switch {
		case p == "":
		case p == "postgres" || p == "redis":
			return nil, fmt.Errorf("--chaos %s: restarting PostgreSQL's primary and failing Redis over are not built yet (parts: %s)",
				p, strings.Join(chaosParts, ","))
		case !slices.Contains(chaosParts, p):
			return nil, fmt.Errorf("--chaos: unknown part %q (parts: %s)", p, strings.Join(chaosParts, ","))
		default:
			out = append(out, p)
		}
	}
	return out, nil
}

// runSplitRehearsal starts the split topology, plays the sale against its
// balancer while --chaos kills and restarts the named parts, checks the
// books (the audit, the reconciliation and what the drain left
// unfinished) and stops everything.
func runSplitRehearsal(cmd *cobra.Command, cfg config.Config, c rehearsal.Config, chaos string) error {
	ctx := cmd.Context()
	parts, err := parseChaos(chaos)
	if err != nil {
		return err
	}
	if c.EventID == "" && c.CreateSeats == 0 {
		c.EventID = "evt_flash_sale"
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	return splitRehearsal(ctx, cfg, c, parts, bin, cmd)
}

// splitRehearsal is runSplitRehearsal with the binary given (tests build
// their own).
func splitRehearsal(ctx context.Context, cfg config.Config, c rehearsal.Config, parts []string, bin string, cmd *cobra.Command) error {
	out := cmd.ErrOrStderr()
	cl, err := topology.Start(ctx, topology.Options{Binary: bin, Dir: system.DataPath(cfg, "rehearse-split"), APIs: SplitAPIs,
		Workers: SplitWorkers, Durable: true, Replica: topology.StreamingReplica, Log: out,
		Env: map[string]string{"ENCORE_SMTP_URL": "smtp://127.0.0.1:1"}}) // emails of a rehearsal are not read
	if err != nil {
		return fmt.Errorf("encore rehearse --split: %w", err)
	}
	defer cl.Close()
	if err := cl.Seed(ctx); err != nil {
		return err
	}
	pool, err := store.Open(ctx, cl.DatabaseURL, 4)
	if err != nil {
		return err
	}
	defer pool.Close()
	st := store.New(pool, store.Options{})
	c.API, c.PSP, c.Admin = cl.BalancerURL, cl.PSPURL, cl.APIs[0].AdminURL
	pay := payments.New(payments.Config{APIKey: cfg.StripeKey.Reveal(), BaseURL: cl.PSPURL})
	c.Books = rehearsal.StackBooks{Store: st, SweepLag: cfg.SweepLagAllowance,
		Activities: &activities.Booking{Store: st, Payments: pay, Log: system.Logger(cfg, out)}}
	c.PSPKey = cfg.StripeKey.Reveal()
	c.Progress = out
	if len(parts) > 0 {
		c.Chaos = chaosMonkey(cl, parts, c.Seed, out)
	}
	s, err := rehearsal.Run(ctx, c)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "%d fans, %d holds, %d bookings paid; %d kills and restarts\n", s.Fans, s.Holds, s.BookingsPaid, len(s.Chaos))
	fmt.Fprintf(w, "double sales %d, unmatched captures %d, audit violations %d, tickets per booking exact %v, stuck workflows %d, lost webhooks %d\n",
		s.DoubleSales, s.UnmatchedCaptures, s.AuditViolations, s.TicketsPerBookingExact, s.StuckWorkflows, s.LostWebhooks)
	fmt.Fprintf(w, "wrote %s/summary.json and %s/report.html\n", c.Out, c.Out)
	if s.Failed() {
		fmt.Fprintln(cmd.ErrOrStderr(), "rehearse: the books broke a rule (see the summary)")
		return exitCode(1)
	}
	return nil
}

// chaosMonkey kills one process of a random named part at random moments
// (every 3 to 8 seconds) and restarts it 1 to 3 seconds later, marking
// both; only processes the split topology started are touched.
func chaosMonkey(cl *topology.Cluster, parts []string, seed int64, log interface{ Write([]byte) (int, error) }) func(context.Context, func(string)) {
	return func(ctx context.Context, mark func(string)) {
		rnd := rand.New(rand.NewPCG(uint64(seed), 7))
		between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rnd.Int64N(int64(hi-lo))) }
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(between(3*time.Second, 8*time.Second)):
			}
			var procs []*topology.Proc
			switch parts[rnd.IntN(len(parts))] {
			case "worker":
				procs = cl.Workers
			case "api":
				procs = cl.APIs
			case "temporal":
				procs = []*topology.Proc{cl.Temporal}
			case "psp":
				procs = []*topology.Proc{cl.PSP}
			}
			p := procs[rnd.IntN(len(procs))]
			down := between(time.Second, 3*time.Second)
			mark("kill " + p.Name)
			// A restart must happen whatever the sale's context says: a
			// part left dead would be a rehearsal of an outage, not a crash.
			if _, err := p.RestartAfter(context.WithoutCancel(ctx), down); err != nil {
				fmt.Fprintf(log, "chaos: %s did not come back: %v\n", p.Name, err)
				continue
			}
			mark("restart " + p.Name)
		}
	}
}
