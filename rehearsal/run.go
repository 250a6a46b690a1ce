package rehearsal

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/encore-tickets/encore/internal/ctxsleep"
)

// run is one rehearsal in progress.
type run struct {
	cfg      Config
	id       string // names the run's accounts, cards, venue and event
	edge     *edge
	clients  *clients
	rec      *recorder
	event    eventView
	seats    int
	left     int
	cardBase int64
	// hotel is the created hotel of the packages ("": none), its stay the
	// night of the show.
	hotel, stayIn, stayOut string
	// sockets is the budget of queue sockets: every one is a file, and the
	// process's open-file limit must also leave room for the HTTP
	// connections. A fan finding it spent polls instead, as the web app
	// does when its socket fails.
	sockets chan struct{}
	// interrupted: the caller stopped the rehearsal; stragglers: some fans
	// were still busy past the hard deadline.
	interrupted, stragglers bool
}

func (rn *run) takeSocket() bool {
	select {
	case rn.sockets <- struct{}{}:
		return true
	default:
		return false
	}
}

func (rn *run) giveSocket() { <-rn.sockets }

// Run plays the sale cfg describes against the stack at cfg.API, checks the
// books, and writes summary.json, the plots and report.html to cfg.Out. It
// returns the summary; an error means the rehearsal could not be played
// (a bad configuration, no stack, no event). A sale that broke a rule is
// not an error: Summary.Failed says so.
func Run(ctx context.Context, cfg Config) (*Summary, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	apiURL, _ := loopbackURL("api", cfg.API)
	cfg.API = strings.TrimRight(apiURL.String(), "/")
	for _, u := range []*string{&cfg.PSP, &cfg.Admin} {
		if *u != "" {
			parsed, _ := loopbackURL("url", *u)
			*u = strings.TrimRight(parsed.String(), "/")
		}
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, err
	}
	now := time.Now()
	rn := &run{cfg: cfg, id: fmt.Sprintf("%x", now.UnixNano()/int64(time.Millisecond)%(1<<40)),
		cardBase: now.UnixNano() % 1_000_000_000}
	rn.clients = newClients(apiURL, cfg.Fans, cfg.FansPerAddress, cfg.Concurrency)
	defer rn.clients.close()
	setup := newRecorder(now)
	rn.edge = &edge{base: cfg.API, sem: make(chan struct{}, cfg.Concurrency), queue: make(chan struct{}, cfg.Concurrency),
		waits: make(chan struct{}, max(cfg.Fans, 1)), rec: setup}
	reserve := 0
	if cfg.Chaos != nil {
		// The chaos restarts processes from this one: their pipes, logs and
		// clients need files the fans must not have taken.
		reserve = chaosFiles
	}
	limit := raiseFileLimit(uint64(cfg.Fans + 2*rn.clients.addresses() + 1024 + reserve))
	// Each address keeps an idle connection besides those in flight.
	filesEach := 1
	if cfg.BalancerHere {
		filesEach = 3
	}
	rn.sockets = make(chan struct{}, socketBudget(limit-uint64(reserve), cfg.Fans, 2*cfg.Concurrency+rn.clients.addresses(),
		rn.clients.addresses(), filesEach))

	if cfg.CreateSeats > 0 {
		ev, err := createEvent(ctx, rn.edge, rn.clients.forFan(0), rn.id, cfg.CreateSeats, cfg.CreateStanding, now.Add(cfg.OpensIn), cfg.HoldTTL)
		if err != nil {
			return nil, err
		}
		rn.cfg.EventID = ev.EventID
		if cfg.PackageRooms > 0 {
			if rn.hotel, err = createHotel(ctx, rn.edge, rn.clients.forFan(0), rn.id, ev, cfg.PackageRooms); err != nil {
				return nil, err
			}
			night := packageNight(ev)
			rn.stayIn, rn.stayOut = night.Format(time.DateOnly), night.AddDate(0, 0, 1).Format(time.DateOnly)
		}
	}
	a := rn.edge.api(ctx, rn.clients.forFan(0), "event", http.MethodGet, "/v1/events/"+rn.cfg.EventID, "", nil)
	// A created event reaches the browse plane once its read replica has
	// replayed it: a not-found is waited out for a while.
	for deadline := time.Now().Add(15 * time.Second); cfg.CreateSeats > 0 && a.status == http.StatusNotFound && time.Now().Before(deadline); {
		if !ctxsleep.Sleep(ctx, 200*time.Millisecond) {
			return nil, ctx.Err()
		}
		a = rn.edge.api(ctx, rn.clients.forFan(0), "event", http.MethodGet, "/v1/events/"+rn.cfg.EventID, "", nil)
	}
	if !a.ok() || a.decode(&rn.event) != nil {
		return nil, fmt.Errorf("event %s at %s: %s %s", rn.cfg.EventID, cfg.API, a.name(), a.problem.Detail)
	}
	for _, s := range rn.event.Sections {
		rn.seats += s.Capacity
		rn.left += s.Available
	}

	rn.rec = newRecorder(time.Now())
	rn.edge.rec = rn.rec
	rn.rec.opened = max(0, rn.event.OnsaleAt.Sub(rn.rec.start))
	rn.play(ctx)
	end := time.Now()

	var books *checked
	if cfg.Books != nil {
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
		c := check(bctx, cfg.Books, rn.cfg.EventID, rn.rec.start.Add(-time.Minute), 5*time.Second)
		cancel()
		books = &c
	}
	s := rn.summarize(end, books)
	if err := s.write(cfg.Out); err != nil {
		return s, err
	}
	plots, err := rn.plot(cfg.Out)
	if err != nil {
		return s, fmt.Errorf("plots: %w", err)
	}
	if err := writeReport(cfg.Out, s, plots); err != nil {
		return s, fmt.Errorf("report: %w", err)
	}
	return s, nil
}

// play lets the fans arrive, Poisson at the arrival rate, and waits for
// them all or the hard deadline.
func (rn *run) play(parent context.Context) {
	cfg := rn.cfg
	ctx, cancel := context.WithTimeout(parent, cfg.Duration+cfg.Drain)
	defer cancel()
	sale, endSale := context.WithTimeout(ctx, cfg.Duration)
	defer endSale()

	mctx, stopMonitor := context.WithCancel(context.WithoutCancel(ctx))
	var bg sync.WaitGroup
	bg.Add(2)
	go func() { defer bg.Done(); rn.monitor(mctx, time.Second) }()
	go func() { defer bg.Done(); rn.progress(mctx) }()
	if cfg.Chaos != nil {
		// The chaos plays during the sale (it may finish a break it must
		// make once past its end); the drain, then the books' own rereads
		// (check), let the stack settle before the books count.
		bg.Add(1)
		go func() { defer bg.Done(); cfg.Chaos(sale, rn.rec.mark) }()
	}

	arrivals := rand.New(rand.NewPCG(uint64(cfg.Seed), 0))
	var fans sync.WaitGroup
	var at time.Duration
	for i := 0; i < cfg.Fans; i++ {
		at += time.Duration(arrivals.ExpFloat64() / cfg.ArrivalRate * float64(time.Second))
		if at >= cfg.Duration || !ctxsleep.Sleep(sale, time.Until(rn.rec.start.Add(at))) {
			break
		}
		fans.Add(1)
		go func(f *fan) {
			defer fans.Done()
			f.live(ctx, sale)
		}(newFan(rn, i))
	}
	// The hard deadline holds: fans still busy 15 seconds after it are left
	// behind (their goroutines written to DIR/stragglers.txt, to see why)
	// rather than waited for.
	finished := make(chan struct{})
	go func() { fans.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-ctx.Done():
		select {
		case <-finished:
		case <-time.After(15 * time.Second):
			rn.stragglers = true
			if f, err := os.Create(filepath.Join(cfg.Out, "stragglers.txt")); err == nil {
				_ = pprof.Lookup("goroutine").WriteTo(f, 1)
				f.Close()
			}
		}
	}
	rn.interrupted = parent.Err() != nil
	stopMonitor()
	bg.Wait()
	rn.rec.sample(rn.sampleNow(context.WithoutCancel(parent), &http.Client{Timeout: 2 * time.Second}))
}

// summarize makes the summary from what was recorded and what the books
// said.
func (rn *run) summarize(end time.Time, books *checked) *Summary {
	r, cfg, n := rn.rec, rn.cfg, &rn.rec.n
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &Summary{Fans: n.arrived.Load(), Admitted: n.admitted.Load(), Holds: n.holds.Load(), BookingsPaid: n.paid.Load(),
		EventID: cfg.EventID, API: cfg.API, StartedAt: r.start.UTC(), DurationS: end.Sub(r.start).Seconds(),
		OpenedAfterS: r.opened.Seconds(), Metered: rn.event.Metered, Seats: rn.seats, SeatsAvailable: rn.left,
		SeatsPaid: n.seatsPaid.Load(), SeatsCancelled: n.seatsCancelled.Load(), HoldAttempts: n.holdAttempts.Load(), HoldConflicts: n.holdConflicts.Load(),
		Checkouts: n.checkouts.Load(), SoldOutFans: n.soldOut.Load(), GaveUp: n.gaveUp.Load(), FoundNothing: n.foundNothing.Load(),
		AbandonedDeleted: n.abandonedDeleted.Load(), AbandonedExpired: n.abandonedExpired.Load(),
		Declines: n.declines.Load(), ThreeDSCompleted: n.threeDSCompleted.Load(), ThreeDSFailed: n.threeDSFailed.Load(),
		SteppedUp: n.steppedUp.Load(), CancelsAsked: n.cancelAsked.Load(), Cancelled: n.cancelled.Load(),
		NotPaid: n.notPaid.Load(), Unsettled: n.unsettled.Load(), SocketFallbacks: n.socketFallbacks.Load(),
		ProofsOfWork: n.proofsOfWork.Load(), OwnCardsFailed: n.ownCardsFailed.Load(),
		SocketBudget: cap(rn.sockets), SocketsOverBudget: n.socketsOverBudget.Load(),
		TransfersOffered: n.transfersOffered.Load(), TransfersAccepted: n.transfersAccepted.Load(), Listed: n.listed.Load(),
		ResaleHolds: n.resaleHolds.Load(), ResalePaid: n.resalePaid.Load(),
		PackageHolds: n.packageHolds.Load(), PackagesPaid: n.packagesPaid.Load(),
		Interrupted: rn.interrupted, Stragglers: rn.stragglers,
		SourceAddresses: rn.clients.addresses(), Errors: map[string]int{}, ErrorsByCall: map[string]map[string]int{},
		Mix: Mix{ArrivalRate: cfg.ArrivalRate, Duration: cfg.Duration.String(), Drain: cfg.Drain.String(),
			Abandon: cfg.Abandon, Decline: cfg.Decline, ThreeDS: cfg.ThreeDS, ThreeDSFail: cfg.ThreeDSFail, Cancel: cfg.Cancel,
			Transfer: cfg.Transfer, Resell: cfg.Resell, Package: cfg.Package, PackageRooms: cfg.PackageRooms,
			Think: cfg.Think.String(), MaxSeats: cfg.MaxSeats, Seed: cfg.Seed, Concurrency: cfg.Concurrency,
			FansPerAddress: cfg.FansPerAddress}}

	holds := make([]time.Duration, len(r.holdLat))
	for i, h := range r.holdLat {
		holds[i] = h.took
	}
	hms := millis(holds)
	s.HoldP50MS, s.HoldP90MS, s.HoldP99MS = percentile(hms, 50), percentile(hms, 90), percentile(hms, 99)
	cos := make([]time.Duration, len(r.checkouts))
	for i, c := range r.checkouts {
		cos[i] = c.took
	}
	cms := millis(cos)
	s.CheckoutP50MS, s.CheckoutP99MS = percentile(cms, 50), percentile(cms, 99)

	var toPaid, lag []time.Duration
	var places, bought []float64
	var lastPaid time.Duration
	for _, b := range r.bookings {
		toPaid = append(toPaid, b.paidAt-b.holdAt)
		lag = append(lag, b.paidAt-b.checkoutAt)
		lastPaid = max(lastPaid, b.paidAt)
		if !math.IsNaN(b.place) {
			places, bought = append(places, b.place), append(bought, b.checkoutAt.Seconds())
		}
	}
	tp, lg := millis(toPaid), millis(lag)
	s.HoldToPaidP50MS, s.HoldToPaidP99MS = percentile(tp, 50), percentile(tp, 99)
	s.SagaLagP50MS, s.SagaLagP99MS = percentile(lg, 50), percentile(lg, 99)
	if len(r.bookings) > 0 {
		s.LastPaidAfterS = (lastPaid - r.opened).Seconds()
		if window := lastPaid - r.opened; window > 0 {
			s.GoodputPerS = float64(len(r.bookings)) / window.Seconds()
		}
		s.Goodput90PerS = goodput90(r.bookings, r.opened)
	}
	if tau, ok := KendallTauB(places, bought); ok {
		s.FairnessKendallTau = &tau
	}
	if r.soldOutAt >= 0 {
		v := max(0, (r.soldOutAt - r.opened).Seconds())
		s.SoldOutAfterS = &v
	}
	s.ErrorExamples = maps.Clone(r.examples)
	for call, m := range r.failures {
		s.ErrorsByCall[call] = map[string]int{}
		for name, c := range m {
			s.Errors[name] += c
			s.ErrorsByCall[call][name] = c
		}
	}
	for _, smp := range r.samples {
		if !math.IsNaN(smp.rss) {
			s.StackRSSMaxBytes = max(s.StackRSSMaxBytes, int64(smp.rss))
			s.StackRSSLastBytes = int64(smp.rss)
		}
	}
	if books != nil {
		s.BooksChecked = true
		if books.auditErr != nil {
			s.AuditError = books.auditErr.Error()
		} else {
			a := books.audit
			s.Audit, s.AuditViolations, s.DoubleSales = &a, a.Violations(), a.SeatsWithManyOwners
		}
		if books.reconErr != nil {
			s.ReconcileError = books.reconErr.Error()
		}
		s.Reconciled, s.Captured = books.recon.Checked, books.recon.Captured
		s.UnmatchedCaptures = len(books.recon.Mismatches)
		s.Mismatches = books.recon.Mismatches[:min(len(books.recon.Mismatches), 50)]
		s.ReconcileRetries, s.SettleRuns = books.reconTries, books.settleTries
		if books.settleErr != nil {
			s.SettleError = books.settleErr.Error()
		}
		s.StuckWorkflows, s.LostWebhooks = books.settled.StuckBookings, books.settled.LostWebhooks
		s.LostWebhookEvents, s.UnsettledBookings = books.settled.LostWebhookEvents, books.settled.UnsettledBookings
		s.TicketsPerBookingExact = books.settleErr == nil && books.auditErr == nil && books.settled.BookingsMissingTickets == 0 &&
			books.audit.TicketsBeyondSale == 0 && books.audit.TicketsRevokedTwice == 0
	}
	s.Chaos = r.chaos
	s.Resources, s.Soak = resources(r.samples), cfg.Soak
	return s
}

// chaosFiles are the open files kept from the fans' sockets for a chaos
// rehearsal's restarts.
const chaosFiles = 2048

// socketBudget is how many queue sockets fit in the open-file limit
// beside an HTTP connection in flight per request slot, one idle one per
// source address, and some spare; at most one per fan.
//
// filesEach is what one connection costs this process: 1, or 3 when the
// balancer the fans reach runs here too (Config.BalancerHere: the fan's
// end, the balancer's incoming end and its connection to an API).
func socketBudget(limit uint64, fans, concurrency, addresses, filesEach int) int {
	filesEach = max(filesEach, 1)
	spare := uint64((concurrency+addresses)*filesEach + 512)
	if limit <= spare {
		return 0
	}
	return int(min((limit-spare)/uint64(filesEach), uint64(fans)))
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// goodput90 is Summary.Goodput90PerS: the first 90% of the paid bookings
// (at least one) over the time from the opening until the last of them.
func goodput90(bs []booking, opened time.Duration) float64 {
	paid := make([]time.Duration, len(bs))
	for i, b := range bs {
		paid[i] = b.paidAt
	}
	slices.Sort(paid)
	n := max(1, int(math.Ceil(0.9*float64(len(paid)))))
	if window := paid[n-1] - opened; window > 0 {
		return float64(n) / window.Seconds()
	}
	return 0
}
