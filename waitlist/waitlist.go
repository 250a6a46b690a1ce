// Package waitlist offers the seats that come back to a sold-out event
// (a hold that expired or was released, a booking cancelled or refunded)
// to the fans on its waitlist, in the order they joined. An offer is an
// admission of its own: a pass that expires (the room's pass lifetime, 5
// minutes by default), told by email and on the fan's queue socket as
// {"status":"offered","pass","pass_expires_at"}. An offer left unused
// lapses and the seats pass to the next fan at the following round.
//
// The list lives in PostgreSQL (store/waitlist.go: the order, the
// arithmetic of free and promised units, all in one transaction under a
// lock per event, so any number of workers may run rounds); Redis only
// carries the admission (waitingroom.Passes.Offer).
package waitlist

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/encore-tickets/encore/notify"
	"github.com/encore-tickets/encore/session"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/waitingroom"
	"github.com/encore-tickets/encore/waitingroom/pass"
)

// Offers runs the waitlist's rounds.
type Offers struct {
	Store *store.Store
	// Room admits offered fans (their pass); nil offers by email only,
	// which suits only unmetered events (their holds need no pass).
	Room   *waitingroom.Room
	Mailer notify.Mailer
	// PublicURL is the web app's origin for the link in the email.
	PublicURL string
	TTL       time.Duration // how long an offer lasts (the pass lifetime, 5m)
	Every     time.Duration // how often every waitlisted event gets a round (2s)
	Log       *slog.Logger

	offers *prometheus.CounterVec
}

func (o *Offers) ttl() time.Duration {
	if o.TTL <= 0 || o.TTL > pass.MaxTTL {
		return pass.MaxTTL
	}
	return o.TTL
}

func (o *Offers) log() *slog.Logger {
	if o.Log == nil {
		return slog.Default()
	}
	return o.Log
}

// Register adds the offers' metrics to reg.
func (o *Offers) Register(reg prometheus.Registerer) {
	o.offers = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "encore_waitlist_offers_total",
		Help: "Waitlist offers by outcome: offered, used (the fan held seats), expired (passed on unused)."}, []string{"outcome"})
	reg.MustRegister(o.offers)
}

func (o *Offers) count(outcome string, n int) {
	if o.offers != nil && n > 0 {
		o.offers.WithLabelValues(outcome).Add(float64(n))
	}
}

// Round runs one round for the event: lapsed offers end (their admissions
// too), free seats go to the next fans, and every fan with an offer not yet
// told is emailed.
func (o *Offers) Round(ctx context.Context, eventID string) (store.WaitlistRound, error) {
	round, err := o.Store.Waitlists.OfferWaitlist(ctx, eventID, o.ttl(), func(w store.WaitlistEntry, until time.Time) error {
		if o.Room == nil {
			return nil
		}
		_, err := o.Room.Passes().Offer(ctx, session.Identity{UserID: w.UserID, DeviceID: w.DeviceID}, eventID, w.ID, until)
		return err
	})
	o.count("offered", len(round.Offered))
	o.count("used", round.Used)
	o.count("expired", len(round.Ended))
	if err != nil {
		return round, err
	}
	for _, w := range round.Ended {
		if o.Room == nil {
			break
		}
		// The fan did not hold: their pass is refused from now on, so the
		// seats are the next fan's alone.
		if _, err := o.Room.Passes().Revoke(ctx, eventID, w.UserID); err != nil {
			o.log().Warn("waitlist: end a lapsed offer's admission", "event", eventID, "err", err)
		}
	}
	return round, o.tell(ctx, eventID)
}

// tell emails every live offer not told yet (offers of an earlier round
// whose email failed included), once each: the message key is the offer's.
func (o *Offers) tell(ctx context.Context, eventID string) error {
	if o.Mailer == nil {
		return nil
	}
	todo, err := o.Store.Waitlists.OffersToTell(ctx, eventID)
	if err != nil {
		return err
	}
	for _, w := range todo {
		if w.Email != "" {
			link := fmt.Sprintf("%s/#/event/%s", o.PublicURL, eventID)
			body := fmt.Sprintf("Good news: %d seat(s) came back for the event you are waiting for.\n\n"+
				"They are yours to choose until %s UTC. Open %s on the device you joined the waitlist from.\n\n"+
				"If you let the offer pass, the seats go to the next fan on the list.\n",
				w.Quantity, w.OfferExpiresAt.UTC().Format("15:04 on 2 Jan 2006"), link)
			if err := o.Mailer.Send(ctx, notify.Message{To: w.Email, Subject: "Seats are back: your waitlist offer",
				Body: body, Key: fmt.Sprintf("waitlist-offer-%d", w.ID)}); err != nil {
				o.log().Warn("waitlist: email an offer", "event", eventID, "err", err)
				continue // told at the next round
			}
		}
		if err := o.Store.Waitlists.OfferTold(ctx, w.ID); err != nil {
			return err
		}
	}
	return nil
}

// Run runs a round for every waitlisted event every Every until ctx ends.
func (o *Offers) Run(ctx context.Context) {
	every := o.Every
	if every <= 0 {
		every = 2 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		events, err := o.Store.Waitlists.WaitlistedEvents(ctx)
		if err != nil {
			if ctx.Err() == nil {
				o.log().Warn("waitlist: list events", "err", err)
			}
			continue
		}
		for _, ev := range events {
			if _, err := o.Round(ctx, ev); err != nil && ctx.Err() == nil {
				o.log().Warn("waitlist: round", "event", ev, "err", err)
			}
		}
	}
}
