package rehearsal

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Config is one rehearsal. Zero values take the defaults of Defaults; Run
// checks it with Validate first.
type Config struct {
	// API is the stack's fan API, loopback only (http://127.0.0.1:8080).
	API string
	// PSP is the payment sandbox, where each fan creates a card of their own
	// as a fan's browser would (loopback only; empty: every fan pays with
	// the shared test card pm_card_visa, which the fraud rule counting
	// accounts per card then steps up to 3-D Secure).
	PSP string
	// PSPKey is the sandbox's API key, sent when creating cards.
	PSPKey string
	// Admin is the stack's admin listener, whose /metrics gives the waiting
	// room's depth, capacity and leases and the process's memory (loopback
	// only; empty: the rehearsal's own view of the queue).
	Admin string
	// Admitters are the admin listeners of the processes that may run the
	// waiting room's admitter when Admin's does not (the split topology's
	// workers): the room's capacity and leases are read from the one
	// elected for the event.
	Admitters []string

	// EventID is the event on sale. With CreateSeats > 0 it is left empty
	// and a fresh metered event of that many seats is created first.
	EventID     string
	CreateSeats int
	// CreateStanding adds a general-admission area of that many places to
	// the created event.
	CreateStanding int
	// PackageRooms, with CreateSeats, adds a hotel beside the venue with
	// that many rooms for the night of the show; Package of the fans want
	// a room with their seats (a package in one hold), and take the seats
	// alone when the rooms are gone.
	PackageRooms int
	Package      float64
	// OpensIn is how far after creation the created event goes on sale
	// (10s): fans arriving before then join before opening.
	OpensIn time.Duration
	// HoldTTL is the created event's hold lifetime (120s): a hold walked
	// away from comes back within the rehearsal.
	HoldTTL time.Duration

	// Fans arrive ArrivalRate a second (a Poisson process) until all have
	// arrived or Duration has passed. Fans still queueing at Duration give
	// up; bookings are then followed to their end for at most Drain. The
	// hard deadline is Duration + Drain.
	Fans        int
	ArrivalRate float64
	Duration    time.Duration
	Drain       time.Duration

	// The mix, as fractions of the fans who reach that step: Abandon of the
	// holds are walked away from (two in three released with DELETE, the
	// rest left to expire); Decline of the payers first try a declined card,
	// then their own; ThreeDS of the payers use the 3-D Secure card, and
	// ThreeDSFail of those fail the challenge (then pay with their own
	// card); Cancel of the paid bookings are cancelled; Transfer of the
	// others give a ticket to a friend who accepts it, and Resell list one
	// for resale, bought by fans who find nothing else left.
	Abandon     float64
	Decline     float64
	ThreeDS     float64
	ThreeDSFail float64
	Cancel      float64
	Transfer    float64
	Resell      float64
	// Think is a fan's mean pause before choosing seats and before paying
	// (uniform between half and one and a half times it).
	Think time.Duration
	// MaxSeats is the most seats a fan asks for (1 to MaxSeats, mostly 2).
	MaxSeats int

	// Seed makes the fans' choices (arrivals, mix, quantities) repeatable.
	Seed int64
	// Concurrency bounds the HTTP requests in flight at once in each of two
	// lanes, the queue's and the sale's (queue sockets excepted: they are
	// idle most of the time).
	Concurrency int
	// FansPerAddress is how many fans share one loopback source address
	// (6: under the stack's default of 8 queue sockets per address).
	FansPerAddress int

	// Out is the folder for summary.json, report.html and the plots.
	Out string
	// Progress receives the progress bar (nil: none); ProgressTTY redraws it
	// in place, otherwise a line is written every few seconds.
	Progress    io.Writer
	ProgressTTY bool
	// Books checks the stack's inventory and payments after the sale (nil:
	// not checked, and the summary says so).
	Books Books
	// Chaos, when set, runs during the sale (until Duration; it may finish a
	// break it must make once past it, and play waits for it) and breaks
	// parts of the stack, telling mark what it did ("kill api1"): each mark
	// is in the summary and a line on the report's plots.
	Chaos func(ctx context.Context, mark func(what string))
	// BalancerHere: the balancer in front of the APIs runs in this process
	// (encore rehearse --split), so every fan's socket and request costs
	// three of its open files: fewer fans get a queue socket, the rest
	// poll, as the web app does when its socket fails.
	BalancerHere bool
	// Servers, when set, is read every second for the resources plot:
	// PostgreSQL's connections and Redis's memory.
	Servers Servers
	// Soak marks a long steady run whose verdict includes the resources:
	// Summary.Failed when one of them grew (Resources.Flat false).
	Soak bool
}

// Defaults is the configuration of a flag left unset.
func Defaults() Config {
	return Config{
		API: "http://127.0.0.1:8080", PSP: "http://127.0.0.1:12111", PSPKey: "sk_test_encore_sandbox",
		Admin:   "http://127.0.0.1:9090",
		OpensIn: 10 * time.Second, HoldTTL: 120 * time.Second,
		Fans: 1000, ArrivalRate: 100, Duration: 60 * time.Second, Drain: 2 * time.Minute,
		// Payments fail about 5% of the time; a share of European cards are
		// stepped up to 3-D Secure; most holds in a flash sale are paid for.
		Abandon: 0.15, Decline: 0.05, ThreeDS: 0.10, ThreeDSFail: 0.2, Cancel: 0.02, Transfer: 0.03, Resell: 0.03, Package: 0.1,
		Think: time.Second, MaxSeats: 4,
		Seed: 1, Concurrency: 64, FansPerAddress: 6,
		Out: "rehearsal",
	}
}

// withDefaults fills zero fields from Defaults (fractions stay as given:
// zero is a valid mix).
func (c Config) withDefaults() Config {
	d := Defaults()
	c.API = cmp.Or(c.API, d.API)
	c.PSPKey = cmp.Or(c.PSPKey, d.PSPKey)
	c.OpensIn = cmp.Or(c.OpensIn, d.OpensIn)
	c.HoldTTL = cmp.Or(c.HoldTTL, d.HoldTTL)
	c.Drain = cmp.Or(c.Drain, d.Drain)
	c.Think = cmp.Or(c.Think, d.Think)
	c.MaxSeats = cmp.Or(c.MaxSeats, d.MaxSeats)
	c.Concurrency = cmp.Or(c.Concurrency, d.Concurrency)
	c.FansPerAddress = cmp.Or(c.FansPerAddress, d.FansPerAddress)
	c.Out = cmp.Or(c.Out, d.Out)
	return c
}

// Validate says what is wrong with the configuration, every problem at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if _, err := loopbackURL("api", c.API); err != nil {
		errs = append(errs, err)
	}
	urls := []struct{ name, url string }{{"psp", c.PSP}, {"admin", c.Admin}}
	for _, a := range c.Admitters {
		urls = append(urls, struct{ name, url string }{"admitter", a})
	}
	for _, u := range urls {
		if u.url == "" {
			continue
		}
		if _, err := loopbackURL(u.name, u.url); err != nil {
			errs = append(errs, err)
		}
	}
	switch {
	case c.EventID == "" && c.CreateSeats <= 0:
		bad("event: name the event on sale, or create one with create-seats")
	case c.EventID != "" && c.CreateSeats > 0:
		bad("event and create-seats: one or the other")
	}
	if c.CreateSeats > 100_000 {
		bad("create-seats: at most 100000")
	}
	if c.PackageRooms < 0 || c.PackageRooms > 10_000 || (c.PackageRooms > 0 && c.CreateSeats <= 0) {
		bad("package-rooms: from 0 to 10000, with create-seats")
	}
	if c.CreateStanding < 0 || c.CreateStanding > 100_000 || (c.CreateStanding > 0 && c.CreateSeats <= 0) {
		bad("create-standing: from 0 to 100000, with create-seats")
	}
	if c.Fans <= 0 || c.Fans > 200_000 {
		bad("fans: from 1 to 200000, not %d", c.Fans)
	}
	if c.ArrivalRate <= 0 || c.ArrivalRate > 10_000 {
		bad("arrival-rate: above 0 and at most 10000 a second, not %g", c.ArrivalRate)
	}
	if c.Duration <= 0 || c.Duration > 2*time.Hour {
		bad("duration: above 0 and at most 2h, not %s", c.Duration)
	}
	if c.Drain < 0 || c.Drain > time.Hour {
		bad("drain: from 0 to 1h, not %s", c.Drain)
	}
	if c.HoldTTL < 30*time.Second || c.HoldTTL > time.Hour {
		bad("hold-ttl: from 30s to 1h, not %s", c.HoldTTL)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"abandon", c.Abandon}, {"decline", c.Decline}, {"threeds", c.ThreeDS}, {"threeds-fail", c.ThreeDSFail}, {"cancel", c.Cancel},
		{"transfer", c.Transfer}, {"resell", c.Resell}, {"package", c.Package}} {
		if f.v < 0 || f.v > 1 {
			bad("%s: a fraction from 0 to 1, not %g", f.name, f.v)
		}
	}
	if c.Transfer+c.Resell > 1 {
		bad("transfer + resell: at most 1 together, not %g", c.Transfer+c.Resell)
	}
	if c.Decline+c.ThreeDS > 1 {
		bad("decline + threeds: at most 1 together, not %g", c.Decline+c.ThreeDS)
	}
	if c.MaxSeats < 1 || c.MaxSeats > 10 {
		bad("max-seats: from 1 to 10, not %d", c.MaxSeats)
	}
	if c.Concurrency < 1 || c.Concurrency > 4096 {
		bad("concurrency: from 1 to 4096, not %d", c.Concurrency)
	}
	if c.FansPerAddress < 1 {
		bad("fans-per-address: at least 1, not %d", c.FansPerAddress)
	}
	if c.Think < 0 {
		bad("think: not negative")
	}
	return errors.Join(errs...)
}
