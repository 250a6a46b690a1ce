package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spf13/cobra"

	"github.com/encore-tickets/encore/activities"
	"github.com/encore-tickets/encore/config"
	"github.com/encore-tickets/encore/dev/stack"
	"github.com/encore-tickets/encore/internal/redisurl"
	"github.com/encore-tickets/encore/rehearsal"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/system"
)

func newRehearseCmd() *cobra.Command {
	c := rehearsal.Defaults()
	var split bool
	var chaos, chaosEvery string
	var soak time.Duration
	cmd := &cobra.Command{
		Use:   "rehearse --event <id> --fans N --arrival-rate R --duration D --out DIR",
		Short: "Play a whole flash sale through a running stack's edge and check its books",
		Long: `Plays a flash sale against a running stack (encore dev) through its real HTTP
and WebSocket edge only: --fans fans, each its own account and device, arrive
--arrival-rate a second (before and after the opening), join the waiting room
and follow its socket with jittered heartbeats (solving the proof of work when
asked), look at the map, contend for the best seats, walk away from some holds
(--abandon), pay with the sandbox's test cards (--decline, --threeds), follow
their bookings to PAID and cancel a few (--cancel). Fans come from many
loopback source addresses, a few each, so the stack's per-address limits stay
what they are for. Every address must be loopback (127.0.0.0/8 or ::1).

It stops by itself: queueing and choosing stop at --duration, bookings are
followed for at most --drain more. Then it runs the inventory audit and the
payment reconciliation against the stack's database and payment provider (as
encore sales finds them), and writes DIR/summary.json, DIR/report.html and the
plots. Exits 1 when the books show a double sale, an unmatched captured payment
or any audit violation.

--create-seats N first creates a fresh metered event of N numbered seats through
the organiser API as the demo organiser olga (org_encore), on sale --opens-in
later, instead of --event.`,
		Example: `  encore rehearse --event evt_flash_sale --fans 2000 --arrival-rate 100 --duration 60s --out rehearsal
  encore rehearse --create-seats 1000 --opens-in 15s --fans 5000 --arrival-rate 83.3 --duration 150s --out runs/5k`,
		Args: cobra.NoArgs,
		RunE: action(func(cmd *cobra.Command, _ []string, cfg config.Config) error {
			if soak > 0 {
				c.Soak, c.Duration = true, soak
				if !cmd.Flags().Changed("fans") { // a steady stream for the whole soak
					c.Fans = min(200_000, int(math.Ceil(c.ArrivalRate*soak.Seconds())))
				}
			}
			if split || chaos != "" {
				every, err := parseChaosGap(chaosEvery)
				if err != nil {
					return err
				}
				return runSplitRehearsal(cmd, cfg, c, chaos, every)
			}
			return runRehearse(cmd, cfg, c)
		}),
	}
	f := cmd.Flags()
	f.BoolVar(&split, "split", false, "start the deployed topology (as encore dev --split) and play the sale against it; --api, --psp and --admin are its own")
	f.StringVar(&chaos, "chaos", "", "with the split topology (implied): break and restore these parts at random moments during the sale, any of "+strings.Join(chaosParts, ","))
	f.StringVar(&chaosEvery, "chaos-every", "3s-8s", "with --chaos: the pause before each break, drawn from this range (every named part is broken once a round)")
	f.DurationVar(&soak, "soak", 0, "a soak this long at a steady --arrival-rate (fans: the rate times the length): the resources plot "+
		"(memory, goroutines, PostgreSQL connections, Redis memory) must stay flat, or the run fails")
	f.StringVar(&c.EventID, "event", "", "event on sale (or --create-seats)")
	f.IntVar(&c.CreateSeats, "create-seats", 0, "create a metered event of this many numbered seats through the organiser API instead of --event")
	f.IntVar(&c.CreateStanding, "create-standing", 0, "with --create-seats: add a standing area of this many places")
	f.IntVar(&c.PackageRooms, "package-rooms", 0, "with --create-seats: add a hotel beside the venue with this many rooms for the night of the show")
	f.Float64Var(&c.Package, "package", c.Package, "with --package-rooms: fraction of fans who want a room with their seats, in one hold (the seats alone once the rooms are gone)")
	f.DurationVar(&c.OpensIn, "opens-in", c.OpensIn, "with --create-seats: the event goes on sale this long after it is created")
	f.DurationVar(&c.HoldTTL, "hold-ttl", c.HoldTTL, "with --create-seats: the event's hold lifetime")
	f.IntVar(&c.Fans, "fans", c.Fans, "fans who arrive")
	f.Float64Var(&c.ArrivalRate, "arrival-rate", c.ArrivalRate, "fans arriving a second (a Poisson process)")
	f.DurationVar(&c.Duration, "duration", c.Duration, "the sale as played: arrivals, queueing and choosing stop then")
	f.DurationVar(&c.Drain, "drain", c.Drain, "after --duration, how long bookings are still followed to their end")
	f.Float64Var(&c.Abandon, "abandon", c.Abandon, "fraction of holds walked away from (two in three released, the rest left to expire)")
	f.Float64Var(&c.Decline, "decline", c.Decline, "fraction of payers whose first card is declined (then they pay with their own)")
	f.Float64Var(&c.ThreeDS, "threeds", c.ThreeDS, "fraction of payers with the 3-D Secure card")
	f.Float64Var(&c.ThreeDSFail, "threeds-fail", c.ThreeDSFail, "fraction of the 3-D Secure payers who fail the challenge (then pay with their own card)")
	f.Float64Var(&c.Cancel, "cancel", c.Cancel, "fraction of paid bookings cancelled")
	f.Float64Var(&c.Transfer, "transfer", c.Transfer, "fraction of the other paid bookings whose fan gives a ticket to a friend, who accepts it")
	f.Float64Var(&c.Resell, "resell", c.Resell, "fraction of the other paid bookings whose fan lists a ticket for resale (bought by fans who find nothing else)")
	f.DurationVar(&c.Think, "think", c.Think, "a fan's mean pause before choosing seats and before paying")
	f.IntVar(&c.MaxSeats, "max-seats", c.MaxSeats, "most seats a fan asks for")
	f.Int64Var(&c.Seed, "seed", c.Seed, "seed of the fans' arrivals and choices")
	f.IntVar(&c.Concurrency, "concurrency", c.Concurrency, "most HTTP requests in flight at once, in the queue's lane and in the sale's each (queue sockets excepted)")
	f.IntVar(&c.FansPerAddress, "fans-per-address", c.FansPerAddress, "fans sharing one loopback source address")
	f.StringVar(&c.API, "api", c.API, "the stack's fan API (loopback only)")
	f.StringVar(&c.PSP, "psp", c.PSP, "the payment sandbox, where fans create their cards (loopback only; empty: every fan pays with pm_card_visa)")
	f.StringVar(&c.Admin, "admin", c.Admin, "the stack's admin listener, for /metrics (loopback only; empty: none)")
	f.StringVar(&c.Out, "out", c.Out, "folder for summary.json, report.html and the plots")
	return cmd
}

// runRehearse opens the stack's books (its database as encore sales finds
// it, its payment provider) before the sale, so a rehearsal that could not
// check them never runs, then plays the sale.
func runRehearse(cmd *cobra.Command, cfg config.Config, c rehearsal.Config) error {
	ctx := cmd.Context()
	if err := c.Validate(); err != nil { // before anything is opened, let alone started
		return err
	}
	inf, err := stack.Provide(ctx, cfg, os.Stderr)
	if err != nil {
		return fmt.Errorf("the stack's servers: %w", err)
	}
	defer func() { _ = inf.Close() }()
	pool, err := store.Open(ctx, inf.DatabaseURL, 2)
	if err != nil {
		return fmt.Errorf("the stack's database: %w", err)
	}
	defer pool.Close()
	if c.Servers, err = stackServers(pool, inf.RedisURL); err != nil {
		return err
	}
	log := system.Logger(cfg, os.Stderr)
	c.Books = rehearsal.StackBooks{Store: store.New(pool, store.Options{}), SweepLag: cfg.SweepLagAllowance,
		Activities: &activities.Booking{Store: store.New(pool, store.Options{}), Payments: system.Payments(cfg), Log: log}}
	c.PSPKey = cfg.StripeKey.Reveal()
	c.Progress = cmd.ErrOrStderr()
	if fi, err := os.Stderr.Stat(); err == nil && c.Progress == os.Stderr {
		c.ProgressTTY = fi.Mode()&os.ModeCharDevice != 0
	}
	s, err := rehearsal.Run(ctx, c)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	tau, soldOut := "n/a", "never"
	if s.FairnessKendallTau != nil {
		tau = fmt.Sprintf("%.3f", *s.FairnessKendallTau)
	}
	if s.SoldOutAfterS != nil {
		soldOut = fmt.Sprintf("%.1f s after opening", *s.SoldOutAfterS)
	}
	fmt.Fprintf(out, "%d fans, %d admitted, %d holds, %d bookings paid (%d seats of %d), %.2f paid/s; sold out %s\n",
		s.Fans, s.Admitted, s.Holds, s.BookingsPaid, s.SeatsPaid, s.Seats, s.GoodputPerS, soldOut)
	fmt.Fprintf(out, "hold p50 %.0f ms, p99 %.0f ms; hold to PAID p99 %.0f ms; saga lag p99 %.0f ms; Kendall tau %s\n",
		s.HoldP50MS, s.HoldP99MS, s.HoldToPaidP99MS, s.SagaLagP99MS, tau)
	fmt.Fprintf(out, "double sales %d, unmatched captures %d, audit violations %d\n", s.DoubleSales, s.UnmatchedCaptures, s.AuditViolations)
	printResources(out, s)
	fmt.Fprintf(out, "wrote %s/summary.json and %s/report.html\n", c.Out, c.Out)
	if s.Interrupted {
		fmt.Fprintln(cmd.ErrOrStderr(), "rehearse: interrupted before the end: the figures cover the sale until then")
	}
	if s.Failed() {
		fmt.Fprintln(cmd.ErrOrStderr(), "rehearse: the books broke a rule (see the summary)")
		return exitCode(1)
	}
	return nil
}

// stackServers reads the stack's PostgreSQL connections and Redis memory
// for the resources plot, through pool and a client of its own.
func stackServers(pool *pgxpool.Pool, redisURL string) (rehearsal.Servers, error) {
	rdb, err := redisurl.Open(redisURL, redisurl.Timeouts{Dial: time.Second, Read: time.Second, Write: time.Second})
	if err != nil {
		return nil, fmt.Errorf("the stack's Redis: %w", err)
	}
	return func(ctx context.Context) (rehearsal.ServerSample, error) {
		out := rehearsal.ServerSample{PostgresConnections: math.NaN(), RedisMemoryBytes: math.NaN()}
		if n, err := store.Connections(ctx, pool); err == nil {
			out.PostgresConnections = float64(n)
		}
		if info, err := rdb.Info(ctx, "memory").Result(); err == nil {
			for _, line := range strings.Split(info, "\n") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
					if b, err := strconv.ParseFloat(v, 64); err == nil {
						out.RedisMemoryBytes = b
					}
				}
			}
		}
		return out, nil
	}, nil
}

// printResources writes the resources' trends: first, last, most and
// growth, and the soak's verdict.
func printResources(out io.Writer, s *rehearsal.Summary) {
	r := s.Resources
	if r == nil {
		if s.Soak {
			fmt.Fprintln(out, "resources: not measured (no admin listener or servers answered)")
		}
		return
	}
	for _, t := range []struct {
		name  string
		scale float64
		unit  string
		tr    *rehearsal.Trend
	}{{"API memory", 1 << 20, " MiB", r.RSSBytes}, {"goroutines", 1, "", r.Goroutines},
		{"PostgreSQL connections", 1, "", r.PostgresConnections}, {"Redis memory", 1 << 20, " MiB", r.RedisMemoryBytes}} {
		if t.tr != nil {
			fmt.Fprintf(out, "%s: first %.0f%s, last %.0f%s, most %.0f%s, growth %.2f\n", t.name, t.tr.First/t.scale, t.unit,
				t.tr.Last/t.scale, t.unit, t.tr.Max/t.scale, t.unit, t.tr.Growth)
		}
	}
	if s.Soak {
		fmt.Fprintf(out, "soak: memory flat %v (grows at most %.2fx, median of the second quarter to the last's); grew: %v\n",
			r.Flat, rehearsal.MaxGrowth, r.Grew)
	}
}
