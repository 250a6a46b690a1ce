package hotels

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/notify"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/vocab"
)

// Notices emails properties what happens to their bookings: every paid
// booking with a stay there, every change (a guest walked in), every
// cancellation and every walk. The notice itself is written in the
// transaction that made the change (store: the sale, the cancellation,
// the walk), so none is lost to a crash; this loop turns each into an
// email through Mailer (the mail queue, which retries), keyed by the
// booking, property and kind, so two processes draining at once, or a
// crash between the send and the mark, still send one email.
type Notices struct {
	Store  *store.Store
	Mailer notify.Mailer
	Log    *slog.Logger
	// PublicURL is the base of the hotelier app's link in each email
	// (empty: none).
	PublicURL string
	// Interval is the loop's pause when nothing is due (0: 1s).
	Interval time.Duration
}

// Run emails notices until ctx ends. Every worker may run it.
func (n *Notices) Run(ctx context.Context) {
	interval := n.Interval
	if interval <= 0 {
		interval = time.Second
	}
	for {
		sent, err := n.Drain(ctx)
		if err != nil && ctx.Err() == nil {
			n.log().Warn("property notices", "err", err)
		}
		if sent > 0 && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

func (n *Notices) log() *slog.Logger {
	if n.Log == nil {
		return slog.Default()
	}
	return n.Log
}

// noticeBatch is how many notices one Drain round reads.
const noticeBatch = 50

// Drain emails the notices not yet sent, oldest first, and says how many
// it handled. A property without a contact address has its notices marked
// and skipped: there is no one to tell.
func (n *Notices) Drain(ctx context.Context) (int, error) {
	ids, err := n.Store.Hotels.UnsentPropertyNotices(ctx, noticeBatch)
	if err != nil {
		return 0, err
	}
	done := 0
	for _, id := range ids {
		pn, err := n.Store.Hotels.PropertyNotice(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return done, err
		}
		if pn.ContactEmail != "" {
			if err := n.Mailer.Send(ctx, NoticeMessage(pn, n.PublicURL)); err != nil {
				return done, fmt.Errorf("hotels: notice %d: %w", id, err)
			}
		} else {
			n.log().Info("property notice not emailed: the property has no contact address", "property", pn.PropertyID, "notice", id)
		}
		if err := n.Store.Hotels.MarkPropertyNoticeSent(ctx, id); err != nil {
			return done, err
		}
		done++
	}
	return done, nil
}

// NoticeKey is the mail queue's key of a notice's email: one email per
// booking, property and kind, however often it is sent.
func NoticeKey(pn store.PropertyNotice) string {
	return "property-" + strings.ToLower(string(pn.Kind)) + "-" + pn.ReservationID + "-" + pn.PropertyID
}

// NoticeMessage is the email a property gets for a notice: what happened,
// the booking and its confirmation numbers, who booked, and each stay's
// room type, rooms and dates.
func NoticeMessage(pn store.PropertyNotice, publicURL string) notify.Message {
	night := pn.Night.Format(time.DateOnly)
	var subject, intro string
	switch pn.Kind {
	case vocab.NoticeBooked:
		subject = "New booking at " + pn.PropertyName
		intro = "A guest has booked and paid for a stay at " + pn.PropertyName + "."
	case vocab.NoticeCancelled:
		subject = "Booking cancelled at " + pn.PropertyName
		intro = "This booking at " + pn.PropertyName + " is cancelled: its rooms are free to sell again."
	case vocab.NoticeWalked:
		subject = "Guest walked from " + pn.PropertyName + " on " + night
		intro = fmt.Sprintf("This guest was walked off the night of %s: the room is given back to %s.", night, pn.PropertyName)
		if pn.OtherProperty != "" {
			intro += " They stay at " + pn.OtherProperty + " that night."
		}
	case vocab.NoticeChanged:
		subject = "Booking changed at " + pn.PropertyName + ": a guest arrives on " + night
		intro = fmt.Sprintf("A guest walked from %s stays at %s on the night of %s, at no charge to them.", pn.OtherProperty,
			pn.PropertyName, night)
	default:
		subject, intro = "Booking update at "+pn.PropertyName, "A booking at "+pn.PropertyName+" changed."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nBooking %s\nGuest: %s\n", intro, pn.ReservationID, pn.Guest)
	for _, st := range pn.Stays {
		fmt.Fprintf(&b, "\n%d × %s: %s to %s (%d night", st.Rooms, st.RoomTypeName, st.Checkin.Format(time.DateOnly),
			st.Checkout.Format(time.DateOnly), st.Nights)
		if st.Nights != 1 {
			b.WriteString("s")
		}
		b.WriteString(")")
		if st.Confirmation != "" {
			b.WriteString(", confirmation " + st.Confirmation)
		}
		if st.Total.Currency != "" && st.Total.Amount > 0 {
			b.WriteString(", " + money.Format(st.Total))
		}
		b.WriteString("\n")
	}
	if publicURL != "" {
		fmt.Fprintf(&b, "\nArrivals and inventory: %s/hotel/#/property/%s\n", publicURL, pn.PropertyID)
	}
	return notify.Message{To: pn.ContactEmail, Subject: subject, Body: b.String(), Key: NoticeKey(pn)}
}
