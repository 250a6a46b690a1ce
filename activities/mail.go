package activities

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/notify"
	"github.com/encore-tickets/encore/store"
	"github.com/encore-tickets/encore/venues"
	"github.com/encore-tickets/encore/vocab"
)

// bookingURL is the web app's page of a booking (its tickets' live codes),
// empty without a public URL.
func (a *Booking) bookingURL(bookingID string) string {
	if a.PublicURL == "" {
		return ""
	}
	return a.PublicURL + "/#/booking/" + bookingID
}

// confirmation is what the confirmation of booking b says: the event, its
// venue and time in the venue's zone, the seats by their labels, the items
// with their prices, the total and the card the provider charged.
func (a *Booking) confirmation(ctx context.Context, id uuid.UUID, bookingID string, b store.BookingView) notify.Confirmation {
	c := notify.Confirmation{BookingID: bookingID, EventTitle: b.Hold.EventID, Total: money.Format(b.Hold.Total),
		BookingURL: a.bookingURL(bookingID)}
	if a.PublicURL != "" {
		c.TicketsURL = a.PublicURL + "/#/tickets"
	}
	info, err := a.Store.Mail().BookingMail(ctx, id)
	if err != nil {
		// The email still goes, with the event's ID for its name.
		a.Log.Warn("confirmation: event details", "booking", bookingID, "err", err)
	} else {
		c.EventTitle, c.Venue, c.When = info.EventTitle, venue(info), when(info)
	}
	cur := b.Hold.Total.Currency
	var discount int64
	ga := map[string]int{}
	var gaOrder []string
	for _, it := range b.Hold.Items {
		section := cmp.Or(info.Sections[it.SectionID], it.SectionID)
		label := section
		if it.SeatID != "" {
			label = seatLabel(info, it)
			c.Seats = append(c.Seats, label)
		} else {
			if ga[section] == 0 {
				gaOrder = append(gaOrder, section)
			}
			ga[section] += it.Quantity
			label = section + " (general admission)"
		}
		unit := money.Money{Amount: it.Price.Amount + it.Discount, Currency: cur}
		c.Lines = append(c.Lines, notify.Line{Label: label, Quantity: it.Quantity, Unit: money.Format(unit),
			Amount: money.Format(money.Money{Amount: unit.Amount * int64(it.Quantity), Currency: cur})})
		discount += it.Discount * int64(it.Quantity)
	}
	for _, s := range gaOrder {
		c.Seats = append(c.Seats, fmt.Sprintf("%s: General admission ×%d", s, ga[s]))
	}
	for _, st := range b.Hold.Stays {
		c.Lines = append(c.Lines, notify.Line{Label: fmt.Sprintf("%s, %s, %s to %s", st.PropertyID, st.RoomType,
			st.Checkin.Format(time.DateOnly), st.Checkout.Format(time.DateOnly)), Quantity: st.Rooms,
			Unit: "", Amount: money.Format(st.Total)})
	}
	if discount > 0 {
		c.Discount, c.PromoCode = money.Format(money.Money{Amount: discount, Currency: cur}), b.Hold.PromoCode
	}
	for _, v := range b.Vouchers {
		// A package's or stay's hotel vouchers, issued in the sale's transaction.
		c.Vouchers = append(c.Vouchers, fmt.Sprintf("voucher %s: %s, %s, %s to %s, confirmation %s", v.ID, v.PropertyID,
			v.RoomType, v.Checkin.Format(time.DateOnly), v.Checkout.Format(time.DateOnly), v.Confirmation))
	}
	if info.CardLast4 != "" {
		// As the capture's answer named it.
		c.Card = cardBrand(info.CardBrand) + " •••• " + info.CardLast4
	} else if b.IntentID != "" && a.Payments != nil {
		// Captured before the card was recorded, or the capture's answer
		// named none: asked of the provider.
		brand, last4, err := a.Payments.CardSummary(ctx, b.IntentID)
		if err != nil {
			// A receipt without the card beats no receipt.
			a.Log.Warn("confirmation: card summary", "booking", bookingID, "err", err)
		} else if last4 != "" {
			c.Card = cardBrand(brand) + " •••• " + last4
		}
	}
	return c
}

// tellCancelled emails the fan that the booking is cancelled and what was
// refunded, once (the cancellation's kind); staff's reason, when recorded
// before the refund, goes with it. A refund of a booking that was not
// cancelled (a late payment given back) says nothing here. Failures are
// logged: the money moved, and the refund must not be retried for an email.
func (a *Booking) tellCancelled(ctx context.Context, id uuid.UUID, bookingID string, refunded int64) {
	if a.Mailer == nil {
		return
	}
	info, err := a.Store.Mail().BookingMail(ctx, id)
	if err != nil {
		a.Log.Warn("cancellation email not sent", "booking", bookingID, "err", err)
		return
	}
	if info.Status != vocab.ReservationCancelled {
		return
	}
	refund := money.Money{Amount: refunded, Currency: info.Currency}
	if err := a.sendCancellation(ctx, id, bookingID, info.CancelReason, &refund); err != nil {
		a.Log.Warn("cancellation email not sent", "booking", bookingID, "err", err)
	}
}

// sendCancellation sends the cancellation once; refund nil reads the
// amount from the booking (refunded in full, or nothing when voided).
func (a *Booking) sendCancellation(ctx context.Context, id uuid.UUID, bookingID, reason string, refund *money.Money) error {
	if done, err := a.Store.Bookings.Notified(ctx, id, NotifyCancellation); err != nil || done {
		return err
	}
	to, err := a.recipient(ctx, id)
	if err != nil {
		return err
	}
	c := notify.Cancellation{BookingID: bookingID, Reason: reason, BookingURL: a.bookingURL(bookingID)}
	if info, err := a.Store.Mail().BookingMail(ctx, id); err == nil {
		c.EventTitle, c.When = info.EventTitle, when(info)
	}
	if refund == nil {
		if b, err := a.Store.Bookings.Booking(ctx, id, ""); err == nil && b.PaymentStatus == vocab.PaymentRefunded {
			refund = &b.Hold.Total
		}
	}
	if refund != nil && refund.Amount > 0 {
		c.Refund = money.Format(*refund)
	}
	m, err := notify.CancellationMessage(to, store.BookingMailKey(id, NotifyCancellation), c)
	if err != nil {
		return err
	}
	if err := a.Mailer.Send(ctx, m); err != nil {
		return err
	}
	return a.Store.Bookings.RecordSentOnce(ctx, id, NotifyCancellation, to)
}

func venue(b store.BookingMail) string {
	switch {
	case b.VenueName == "":
		return b.VenueCity
	case b.VenueCity == "":
		return b.VenueName
	}
	return b.VenueName + ", " + b.VenueCity
}

// when is the event's start in the venue's zone, with its offset from UTC
// spelt out: "Fri 5 Jun 2026, 20:00 WEST (UTC+01:00)".
func when(b store.BookingMail) string {
	if b.StartsAt.IsZero() {
		return ""
	}
	loc, err := time.LoadLocation(cmp.Or(b.TimeZone, "UTC"))
	if err != nil {
		loc = time.UTC
	}
	t := b.StartsAt.In(loc)
	return t.Format("Mon 2 Jan 2006, 15:04 MST") + " (UTC" + t.Format("-07:00") + ")"
}

func seatLabel(b store.BookingMail, it store.Item) string {
	l, ok := b.Seats[it.SeatID]
	if !ok {
		return it.SeatID
	}
	return venues.Label(store.Place{Section: cmp.Or(b.Sections[l.SectionID], l.SectionID), Row: l.Row, Number: l.Number})
}

// cardBrand spells a provider's brand code as the card says it.
func cardBrand(code string) string {
	switch code {
	case "amex":
		return "American Express"
	case "diners":
		return "Diners Club"
	case "jcb":
		return "JCB"
	case "unionpay":
		return "UnionPay"
	case "mastercard":
		return "Mastercard"
	case "", "unknown":
		return "Card"
	}
	return strings.ToUpper(code[:1]) + code[1:]
}
