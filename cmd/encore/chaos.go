package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/psp"
	"github.com/encore-tickets/encore/dev/topology"
	"github.com/encore-tickets/encore/internal/ctxsleep"
	"github.com/encore-tickets/encore/payments"
	"github.com/encore-tickets/encore/rehearsal"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/system"
)

// chaosParts are the parts encore rehearse --chaos can break: processes it
// SIGKILLs and restarts (worker, api, temporal), PostgreSQL's primary
// (crashed and restarted), Redis (its master killed, the sentinel failing
// over) and the payment provider (the sandbox's faults thrown, then the
// sandbox itself killed).
var chaosParts = []string{"worker", "api", "temporal", "postgres", "redis", "psp"}

// parseChaos reads --chaos: a comma-separated subset of chaosParts.
func parseChaos(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		switch {
		case p == "":
		case !slices.Contains(chaosParts, p):
			return nil, fmt.Errorf("--chaos: unknown part %q (parts: %s)", p, strings.Join(chaosParts, ","))
		case slices.Contains(out, p):
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
func runSplitRehearsal(cmd *cobra.Command, cfg config.Config, c rehearsal.Config, chaos string, every chaosGap) error {
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
	return splitRehearsal(ctx, cfg, c, parts, every, bin, cmd)
}

// splitRehearsal is runSplitRehearsal with the binary given (tests build
// their own).
func splitRehearsal(ctx context.Context, cfg config.Config, c rehearsal.Config, parts []string, every chaosGap, bin string, cmd *cobra.Command) error {
	out := cmd.ErrOrStderr()
	cl, err := startSplit(ctx, topology.Options{Binary: bin, Dir: system.DataPath(cfg, "rehearse-split"), APIs: SplitAPIs,
		Workers: SplitWorkers, Durable: true, Replica: topology.StreamingReplica, Sentinel: true, FansThroughBalancer: true, Log: out,
		Env: map[string]string{"ENCORE_SMTP_URL": "smtp://127.0.0.1:1"}}) // emails of a rehearsal are not read
	if err != nil {
		return fmt.Errorf("encore rehearse --split: %w", err)
	}
	defer cl.Close()
	if err := cl.Seed(ctx); err != nil {
		return err
	}
	return rehearseOn(ctx, cfg, cl, c, parts, every, cmd)
}

// rehearseOn plays the rehearsal against a started and seeded split
// topology and checks its books; the caller stops the topology.
func rehearseOn(ctx context.Context, cfg config.Config, cl *topology.Cluster, c rehearsal.Config, parts []string, every chaosGap, cmd *cobra.Command) error {
	out := cmd.ErrOrStderr()
	pool, err := store.Open(ctx, cl.DatabaseURL, 4)
	if err != nil {
		return err
	}
	defer pool.Close()
	if c.Servers, err = stackServers(pool, cl.RedisURL); err != nil {
		return err
	}
	st := store.New(pool, store.Options{})
	c.API, c.PSP, c.Admin = cl.BalancerURL, cl.PSPURL, cl.APIs[0].AdminURL
	for _, w := range cl.Workers {
		c.Admitters = append(c.Admitters, w.AdminURL)
	}
	pay := payments.New(payments.Config{APIKey: cfg.StripeKey.Reveal(), BaseURL: cl.PSPURL})
	c.Books = rehearsal.StackBooks{Store: st, SweepLag: cfg.SweepLagAllowance,
		Activities: &activities.Booking{Store: st, Payments: pay, Log: system.Logger(cfg, out)}}
	c.PSPKey = cfg.StripeKey.Reveal()
	c.Progress = out
	c.BalancerHere = true // topology's balancer runs in this process
	if len(parts) > 0 {
		c.Chaos = chaosMonkey(cl, parts, c.Seed, every, out)
	}
	s, err := rehearsal.Run(ctx, c)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "%d fans, %d holds, %d bookings paid; %d kills and restarts\n", s.Fans, s.Holds, s.BookingsPaid, len(s.Chaos))
	fmt.Fprintf(w, "double sales %d, unmatched captures %d, audit violations %d, tickets per booking exact %v, stuck workflows %d, lost webhooks %d\n",
		s.DoubleSales, s.UnmatchedCaptures, s.AuditViolations, s.TicketsPerBookingExact, s.StuckWorkflows, s.LostWebhooks)
	printResources(w, s)
	fmt.Fprintf(w, "wrote %s/summary.json and %s/report.html\n", c.Out, c.Out)
	if s.Failed() {
		fmt.Fprintln(cmd.ErrOrStderr(), "rehearse: the books broke a rule (see the summary)")
		return exitCode(1)
	}
	return nil
}

// chaosGap is how long the chaos waits between two breaks: a uniform
// draw between its bounds.
type chaosGap struct{ lo, hi time.Duration }

// defaultChaosGap is --chaos-every's default.
var defaultChaosGap = chaosGap{3 * time.Second, 8 * time.Second}

// parseChaosGap reads --chaos-every: "3s-8s", or one duration.
func parseChaosGap(s string) (chaosGap, error) {
	lo, hi, found := strings.Cut(s, "-")
	if !found {
		hi = lo
	}
	a, err1 := time.ParseDuration(strings.TrimSpace(lo))
	b, err2 := time.ParseDuration(strings.TrimSpace(hi))
	if err1 != nil || err2 != nil || a < 500*time.Millisecond || b < a || b > 10*time.Minute {
		return chaosGap{}, fmt.Errorf("--chaos-every %q: a duration or a range such as 3s-8s, from 500ms to 10m", s)
	}
	return chaosGap{a, b}, nil
}

// pspFaults are the payment provider's bad moments a chaos rehearsal
// throws: a third of confirm and capture answers lost after success, a
// third of webhooks duplicated, a third overtaken by the next, every one
// two seconds late.
var pspFaults = psp.Faults{TimeoutAfterSuccessRate: 0.3, DuplicateWebhookRate: 0.3, OutOfOrderWebhookRate: 0.3, WebhookDelayMS: 2000}

// chaosMonkey breaks the named parts during the sale, one at a time, each
// every round in a fresh random order (the first round finished even after
// the sale, so every part is broken once), a gap drawn from every before
// each break; each is down 1 to 3 seconds. Only what the split topology
// started is touched. Every break is marked "kill ..." or "fault ..." (a
// line on the report's plots) and every recovery too.
func chaosMonkey(cl *topology.Cluster, parts []string, seed int64, every chaosGap, log io.Writer) func(context.Context, func(string)) {
	return func(ctx context.Context, mark func(string)) {
		rnd := rand.New(rand.NewPCG(uint64(seed), 7))
		between := func(lo, hi time.Duration) time.Duration {
			if hi <= lo {
				return lo
			}
			return lo + time.Duration(rnd.Int64N(int64(hi-lo)))
		}
		var round []string
		// The first round is played out even past the sale's end: when the
		// restarts are slow (a loaded machine), a short sale still breaks
		// every named part once.
		firstRound := len(parts)
		for {
			if len(round) == 0 {
				round = slices.Clone(parts)
				rnd.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
			}
			part := round[0]
			round = round[1:]
			gap := between(every.lo, every.hi)
			if firstRound > 0 {
				firstRound--
				time.Sleep(gap)
			} else {
				select {
				case <-ctx.Done():
					return
				case <-time.After(gap):
				}
			}
			// A part comes back whatever the sale's context says: one left
			// broken would rehearse an outage, not a crash.
			bg := context.WithoutCancel(ctx)
			if err := breakPart(bg, cl, part, between(time.Second, 3*time.Second), rnd, mark); err != nil {
				fmt.Fprintf(log, "chaos: %s: %v\n", part, err)
			}
		}
	}
}

// breakPart breaks one part for about down and brings it back.
func breakPart(ctx context.Context, cl *topology.Cluster, part string, down time.Duration, rnd *rand.Rand, mark func(string)) error {
	restart := func(p *topology.Proc) error {
		mark("kill " + p.Name)
		_, err := p.RestartAfter(ctx, down)
		// As a supervisor does: start it again until it stays up.
		for try := 0; err != nil && try < 30; try++ {
			if !ctxsleep.Sleep(ctx, 2*time.Second) {
				break
			}
			err = p.Start(ctx)
		}
		if err != nil {
			return fmt.Errorf("%s did not come back: %w", p.Name, err)
		}
		mark("restart " + p.Name)
		return nil
	}
	switch part {
	case "worker":
		return restart(cl.Workers[rnd.IntN(len(cl.Workers))])
	case "api":
		return restart(cl.APIs[rnd.IntN(len(cl.APIs))])
	case "temporal":
		return restart(cl.Temporal)
	case "postgres":
		mark("kill postgres (primary crashed)")
		if err := cl.RestartPostgres(ctx, down); err != nil {
			return err
		}
		mark("restart postgres")
	case "redis":
		mark("kill redis (master; the sentinel fails over)")
		if err := cl.FailRedisOver(ctx, down); err != nil {
			return err
		}
		mark("restart redis (as the new master's replica)")
	case "psp":
		// The provider misbehaves for a while, then its process dies; the
		// restarted sandbox starts with every fault off.
		if _, err := psp.SetFaults(ctx, cl.PSPURL, pspFaults); err != nil {
			return err
		}
		mark("fault psp (lost answers, duplicate, out-of-order and late webhooks)")
		if !ctxsleep.Sleep(ctx, 2*down) {
			return ctx.Err()
		}
		return restart(cl.PSP)
	}
	return nil
}
