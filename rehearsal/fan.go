package rehearsal

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/encore-tickets/encore/internal/ctxsleep"
)

// fan is one simulated fan: an account on a device of its own, with its
// choices drawn up front from the rehearsal's seed.
type fan struct {
	i      int
	run    *run
	r      *rand.Rand
	client *http.Client
	user   string
	token  string

	heartbeat int     // seconds, as the room asks
	place     float64 // place in the queue; NaN until known

	// The fan's mind, drawn at arrival.
	quantity     int
	general      bool // prefers a standing area when there is one
	abandon      bool
	release      bool // abandons with DELETE (else walks away)
	payWith      string
	failThreeDS  bool
	cancel       bool
	transfer     bool // once paid, gives a ticket to a friend
	resell       bool // once paid, lists a ticket for resale
	boughtResale bool // holds a resale listing, not fresh seats
	pkg          bool // wants a hotel room with the seats
	heldPackage  bool // the hold has the room
}

// Payment plans.
const (
	payOwnCard  = "own"
	payDeclined = "declined"
	payThreeDS  = "threeds"
)

func newFan(rn *run, i int) *fan {
	c := rn.cfg
	r := rand.New(rand.NewPCG(uint64(c.Seed), uint64(i)+1))
	f := &fan{i: i, run: rn, r: r, client: rn.clients.forFan(i), heartbeat: 5, place: math.NaN(),
		user: fmt.Sprintf("rh%s_%d", rn.id, i)}
	f.quantity = quantity(r, c.MaxSeats)
	f.general = r.Float64() < 0.3
	f.abandon = r.Float64() < c.Abandon
	f.release = r.Float64() < 2.0/3
	switch p := r.Float64(); {
	case p < c.Decline:
		f.payWith = payDeclined
	case p < c.Decline+c.ThreeDS:
		f.payWith = payThreeDS
	default:
		f.payWith = payOwnCard
	}
	f.failThreeDS = r.Float64() < c.ThreeDSFail
	f.cancel = r.Float64() < c.Cancel
	// Drawn last, so the rest of a seed's fans stay as they were.
	switch p := r.Float64(); {
	case f.cancel:
	case p < c.Transfer:
		f.transfer = true
	case p < c.Transfer+c.Resell:
		f.resell = true
	}
	f.pkg = rn.hotel != "" && r.Float64() < c.Package
	return f
}

// quantity is how many seats a fan wants: mostly two, some one, three or
// four, at most max.
func quantity(r *rand.Rand, most int) int {
	weights := []float64{0.2, 0.5, 0.15, 0.15}
	for len(weights) < most {
		weights = append(weights, 0.02)
	}
	weights = weights[:most]
	var sum float64
	for _, w := range weights {
		sum += w
	}
	p := r.Float64() * sum
	for i, w := range weights {
		if p < w {
			return i + 1
		}
		p -= w
	}
	return most
}

// jitter is d times a uniform factor in [lo, hi).
func jitter(r *rand.Rand, d time.Duration, lo, hi float64) time.Duration {
	return time.Duration(float64(d) * (lo + r.Float64()*(hi-lo)))
}

// key is an Idempotency-Key unique to the fan, the step and the attempt.
func (f *fan) key(step string, n int) string {
	return f.user + "-" + step + "-" + strconv.Itoa(n)
}

func (f *fan) think(ctx context.Context) bool {
	return ctxsleep.Sleep(ctx, jitter(f.r, f.run.cfg.Think, 0.5, 1.5))
}

// live plays the fan's sale: sign in, queue, look at the map, hold (a
// resale listing when nothing else is left), then walk away or pay,
// follow the booking to its end, and maybe cancel it, transfer a ticket
// or list one for resale. sale
// ends when the sale as played ends (queueing and choosing stop); ctx is
// the hard deadline (paying and following go on until it).
func (f *fan) live(ctx, sale context.Context) {
	rn := f.run
	rn.rec.n.arrived.Add(1)
	if !f.signIn(ctx) {
		return
	}
	var pass string
	if rn.event.Metered {
		var soldOut bool
		pass, soldOut = f.queue(sale)
		if soldOut {
			rn.rec.n.soldOut.Add(1)
			return
		}
		if pass == "" {
			rn.rec.n.gaveUp.Add(1)
			return
		}
	} else {
		f.place = float64(rn.rec.n.admitted.Load() + 1) // no queue: arrival order
	}
	rn.rec.n.admitted.Add(1)

	hold, seats, holdAt, ok := f.hold(sale, pass)
	if !ok {
		return
	}
	if f.abandon {
		if f.release {
			a := rn.edge.api(ctx, f.client, "release", http.MethodDelete, "/v1/holds/"+hold, f.token, nil,
				"Idempotency-Key", f.key("release", 0))
			if a.ok() {
				rn.rec.n.abandonedDeleted.Add(1)
			}
		} else {
			rn.rec.n.abandonedExpired.Add(1)
		}
		return
	}
	if !f.think(ctx) {
		return
	}
	checkoutAt, ok := f.pay(ctx, hold)
	if !ok {
		return
	}
	if !f.follow(ctx, hold, seats, holdAt, checkoutAt) {
		return
	}
	if f.boughtResale {
		rn.rec.n.resalePaid.Add(1)
	}
	if f.heldPackage {
		rn.rec.n.packagesPaid.Add(1)
	}
	if f.transfer || f.resell {
		f.handOn(ctx, hold)
	}
	if !f.cancel {
		return
	}
	rn.rec.n.cancelAsked.Add(1)
	a := rn.edge.api(ctx, f.client, "cancel", http.MethodPost, "/v1/bookings/"+hold+"/cancel", f.token, struct{}{},
		"Idempotency-Key", f.key("cancel", 0))
	var b struct {
		Status string `json:"status"`
	}
	if a.ok() && a.decode(&b) == nil && (b.Status == "REFUNDED" || b.Status == "CANCELLED") {
		rn.rec.n.cancelled.Add(1)
		// The seats go back on sale: another fan may pay for them too.
		rn.rec.n.seatsCancelled.Add(int64(seats))
	}
}

// signIn is the demo login: a token for the fan's own account and device,
// asked again while the stack says to slow down or is unavailable.
func (f *fan) signIn(ctx context.Context) bool {
	for attempt := 0; attempt < 4; attempt++ {
		token, a := f.session(ctx, f.user)
		if token != "" {
			f.token = token
			return true
		}
		if a.status != 0 && a.status != http.StatusTooManyRequests && a.status != http.StatusServiceUnavailable {
			return false
		}
		if !ctxsleep.Sleep(ctx, a.retryAfter(time.Second)) {
			return false
		}
	}
	return false
}

// eventView is GET /v1/events/{id}, as much as a fan reads of it.
type eventView struct {
	ID       string        `json:"id"`
	Metered  bool          `json:"metered"`
	OnsaleAt time.Time     `json:"onsale_at"`
	Sections []sectionView `json:"sections"`
}

type sectionView struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Capacity  int    `json:"capacity"`
	Available int    `json:"available"`
	BasePrice struct {
		Amount int64 `json:"amount"`
	} `json:"base_price"`
}

type seatView struct {
	ID     string `json:"id"`
	Row    string `json:"row"`
	Number int    `json:"number"`
	Status string `json:"status"`
}

// hold looks at the map and holds seats, as a fan does in a sale: the
// best seats of the best section first (everyone ranks them alike, so fans
// collide), then the alternatives the stack offers with a conflict or the
// next best seats still free on the map, then the best available the stack
// picks (section and quantity); after three conflicts in one section, a
// fresh look at the event and another section. It gives up when nothing
// is left, after a dozen attempts, when the sale ends, or when the stack
// says no for another reason (the pass ran out, the purchase limit).
func (f *fan) hold(ctx context.Context, pass string) (id string, seats int, holdAt time.Time, ok bool) {
	rn := f.run
	headers := []string{}
	if pass != "" {
		headers = append(headers, "X-Admission-Pass", pass)
	}
	var sec sectionView
	var seatMap []seatView
	var choice []string
	taken := map[string]bool{}
	here := -1 // conflicts in this section; -1: look at the event first
	for attempt := 0; attempt < 12 && ctx.Err() == nil; attempt++ {
		if here < 0 || here >= 3 {
			var ev eventView
			a := rn.edge.api(ctx, f.client, "event", http.MethodGet, "/v1/events/"+rn.event.ID, "", nil)
			if a.passing() {
				if !ctxsleep.Sleep(ctx, a.retryAfter(jitter(f.r, time.Second, 1, 2))) {
					return "", 0, time.Time{}, false
				}
				continue
			}
			if !a.ok() || a.decode(&ev) != nil {
				return "", 0, time.Time{}, false
			}
			var found bool
			if sec, found = f.pickSection(ev.Sections); !found {
				// Nothing left: a ticket another fan resells, if any.
				if id, ok := f.holdListing(ctx, headers); ok {
					f.boughtResale = true
					return id, 1, time.Now(), true
				}
				rn.rec.n.foundNothing.Add(1)
				return "", 0, time.Time{}, false
			}
			here, seatMap, choice = 0, nil, nil
		}
		body := map[string]any{"event_id": rn.event.ID}
		switch {
		case sec.Kind == "general":
			body["section_id"], body["quantity"] = sec.ID, f.quantity
		case here >= 2:
			body["section_id"], body["quantity"], body["adjacent"] = sec.ID, f.quantity, true // the best available, together
		default:
			if len(choice) == 0 {
				if seatMap == nil || here > 0 {
					seatMap = f.seatMap(ctx, sec.ID)
				}
				choice = bestSeats(seatMap, taken, f.quantity)
			}
			if len(choice) > 0 {
				body["seat_ids"] = choice
			} else { // the map is stale or full: let the stack pick
				body["section_id"], body["quantity"], body["adjacent"] = sec.ID, f.quantity, true
			}
		}
		if f.pkg { // the room for the night of the show, in the same hold
			body["stays"] = []map[string]any{{"property_id": rn.hotel, "room_type": "double", "checkin": rn.stayIn,
				"checkout": rn.stayOut, "rooms": 1}}
		}
		if attempt == 0 && !f.think(ctx) { // the fan looks at the map a while: it grows stale
			return "", 0, time.Time{}, false
		}
		t0 := time.Now()
		rn.rec.n.holdAttempts.Add(1)
		a := rn.edge.api(ctx, f.client, "hold", http.MethodPost, "/v1/holds", f.token, body,
			append([]string{"Idempotency-Key", f.key("hold", attempt)}, headers...)...)
		if a.status != 0 {
			rn.rec.hold(timed{at: rn.rec.since(t0), took: a.took, outcome: outcomeOf(a)})
		}
		switch {
		case a.status == http.StatusCreated:
			var h struct {
				HoldID  string   `json:"hold_id"`
				SeatIDs []string `json:"seat_ids"`
			}
			if a.decode(&h) != nil || h.HoldID == "" {
				return "", 0, time.Time{}, false
			}
			rn.rec.n.holds.Add(1)
			if f.pkg {
				f.heldPackage = true
				rn.rec.n.packageHolds.Add(1)
			}
			n := len(h.SeatIDs) // a standing area's hold may name no seats
			if n == 0 {
				n = f.quantity
			}
			return h.HoldID, n, t0, true
		case a.name() == "seat-unavailable":
			rn.rec.n.holdConflicts.Add(1)
			here++
			for _, s := range choice {
				taken[s] = true
			}
			for _, s := range a.problem.Unavailable {
				taken[s] = true
			}
			choice = nil
			if len(a.problem.Alternatives) == f.quantity {
				choice = a.problem.Alternatives
			}
		case f.pkg && (a.name() == "room-unavailable" || a.name() == "stay-limit" || a.name() == "stay-already-held"):
			f.pkg = false // the rooms are gone: the seats alone
		case a.passing(), a.name() == "not-on-sale":
			if !ctxsleep.Sleep(ctx, a.retryAfter(jitter(f.r, time.Second, 1, 2))) {
				return "", 0, time.Time{}, false
			}
		default: // queue-required (the pass ran out), purchase-limit, ...: the fan leaves
			return "", 0, time.Time{}, false
		}
	}
	return "", 0, time.Time{}, false
}

// outcomeOf names an answer for the hold latency samples.
func outcomeOf(a answer) string {
	if a.ok() {
		return strconv.Itoa(a.status)
	}
	return a.name()
}

// pickSection is where the fan looks: mostly the dearest seated section
// with enough seats left (where everyone looks), sometimes another one,
// and the standing area for fans who prefer it.
func (f *fan) pickSection(secs []sectionView) (sectionView, bool) {
	var seated, general []sectionView
	for _, s := range secs {
		if s.Available < f.quantity {
			continue
		}
		if s.Kind == "general" {
			general = append(general, s)
		} else {
			seated = append(seated, s)
		}
	}
	if len(general) > 0 && (f.general || len(seated) == 0) {
		return general[f.r.IntN(len(general))], true
	}
	if len(seated) == 0 {
		return sectionView{}, false
	}
	slices.SortStableFunc(seated, func(a, b sectionView) int { return cmp.Compare(b.BasePrice.Amount, a.BasePrice.Amount) })
	if f.r.Float64() < 0.7 {
		return seated[0], true
	}
	return seated[f.r.IntN(len(seated))], true
}

func (f *fan) seatMap(ctx context.Context, section string) []seatView {
	var m struct {
		Seats []seatView `json:"seats"`
	}
	a := f.run.edge.api(ctx, f.client, "seats", http.MethodGet, "/v1/events/"+f.run.event.ID+"/sections/"+section+"/seats", "", nil)
	if !a.ok() || a.decode(&m) != nil {
		return nil
	}
	return m.Seats
}

// bestSeats are the n best available seats of a map, leaving out those
// known taken: the front rows first, then the middle of the row. Everyone
// ranks seats the same way, so fans contend for the same seats.
func bestSeats(seats []seatView, taken map[string]bool, n int) []string {
	type ranked struct {
		id       string
		row      int
		distance float64
	}
	rows := map[string]int{}
	lo, hi := map[string]int{}, map[string]int{}
	for _, s := range seats {
		if _, ok := rows[s.Row]; !ok {
			rows[s.Row] = len(rows)
			lo[s.Row], hi[s.Row] = s.Number, s.Number
		}
		lo[s.Row], hi[s.Row] = min(lo[s.Row], s.Number), max(hi[s.Row], s.Number)
	}
	var free []ranked
	for _, s := range seats {
		if s.Status != "AVAILABLE" || taken[s.ID] {
			continue
		}
		mid := float64(lo[s.Row]+hi[s.Row]) / 2
		free = append(free, ranked{s.ID, rows[s.Row], math.Abs(float64(s.Number) - mid)})
	}
	if len(free) < n {
		return nil
	}
	slices.SortStableFunc(free, func(a, b ranked) int {
		return cmp.Or(cmp.Compare(a.row, b.row), cmp.Compare(a.distance, b.distance))
	})
	out := make([]string, n)
	for i := range out {
		out[i] = free[i].id
	}
	return out
}

// followWait is how long the API may hold a fan's read of its booking
// until the booking changes (Prefer: wait), as the fan's page asks.
const followWait = "wait=20"

// follow waits on the booking as the fan's page does: a first read, then
// reads the API holds until the booking changes (If-None-Match with the
// last ETag, Prefer: wait), until it is PAID or ends otherwise, or the
// deadline passes, and records a paid booking. A read that fails, or a
// stack that answers a waiting read at once without a change, is read
// again about a second later, as before pages waited.
func (f *fan) follow(ctx context.Context, id string, seats int, holdAt, checkoutAt time.Time) bool {
	rn := f.run
	etag := ""
	for ctx.Err() == nil {
		call, headers := "booking", []string(nil)
		if etag != "" {
			call, headers = "booking-wait", []string{"If-None-Match", etag, "Prefer", followWait}
		}
		a := rn.edge.api(ctx, f.client, call, http.MethodGet, "/v1/bookings/"+id, f.token, nil, headers...)
		if a.status == http.StatusNotModified && a.took >= time.Second {
			continue // held until the wait ran out, unchanged: wait again
		}
		var b struct {
			Status string `json:"status"`
		}
		if a.ok() && a.decode(&b) == nil {
			switch b.Status {
			case "PAID":
				now := time.Now()
				rn.rec.n.paid.Add(1)
				rn.rec.n.seatsPaid.Add(int64(seats))
				rn.rec.paid(booking{place: f.place, holdAt: rn.rec.since(holdAt), checkoutAt: rn.rec.since(checkoutAt),
					paidAt: rn.rec.since(now), seats: seats})
				return true
			case "EXPIRED", "CANCELLED", "REFUNDED", "FAILED":
				rn.rec.n.notPaid.Add(1)
				rn.rec.failure("booking", "ended-"+b.Status)
				return false
			}
			if tag := a.header.Get("ETag"); tag != "" && tag != etag {
				etag = tag
				continue // changed, not settled: wait for the next change
			}
		}
		if !ctxsleep.Sleep(ctx, jitter(f.r, time.Second, 0.7, 1.3)) {
			break
		}
	}
	rn.rec.n.unsettled.Add(1)
	return false
}
