package activities

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"

	"github.com/encore-tickets/encore/money"
	"github.com/encore-tickets/encore/notify"
	"github.com/encore-tickets/encore/payments"
	"github.com/encore-tickets/encore/store"
)

// StepKeyPayout is the step key of one listing's payout to its seller
// (the listing's ID filled in): a refund of part of the seller's payment.
const StepKeyPayout = "payout-%s"

// issueResold moves a paid resale booking's listings to its buyer: one new
// ticket per listing, each with its own ID and sealed secret, the seller's
// ticket TRANSFERRED in the same transaction. A retry keeps the tickets
// already moved.
func (a *Booking) issueResold(ctx context.Context, id uuid.UUID) ([]string, error) {
	due, err := a.Store.Resale.SoldListings(ctx, id)
	if err != nil {
		return nil, err
	}
	fresh := make([]store.ResoldTicket, due)
	for i := range fresh {
		tid, sealed, err := a.Keyring.Mint()
		if err != nil {
			return nil, err
		}
		fresh[i] = store.ResoldTicket{ID: tid, SecretSealed: sealed}
	}
	ids, err := a.Store.Resale.IssueResold(ctx, id, fresh)
	if errors.Is(err, store.ErrNotPaid) {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeNotPaid, err)
	}
	return ids, err
}

// PaySellers pays the seller of each listing the paid resale booking
// bought, once: the price less the fee goes back to the card the seller
// bought the ticket with, as a partial refund under the listing's step key,
// up to what they paid; whatever is left (they hold the ticket by
// transfer, or paid less than the payout) is recorded as owed. A refund the
// provider refuses for good (the seller's payment was refunded meanwhile)
// is recorded as owed too; any other failure is retried. Each seller is
// told by email.
func (a *Booking) PaySellers(ctx context.Context, bookingID string) error {
	id, err := parseID(bookingID)
	if err != nil {
		return err
	}
	due, err := a.Store.Resale.PayoutsDue(ctx, id)
	if err != nil {
		return err
	}
	for _, d := range due {
		refunded, refundID := int64(0), ""
		if d.Refundable > 0 {
			r, err := a.Payments.RefundAmount(ctx, StepKey(bookingID, fmt.Sprintf(StepKeyPayout, d.ListingID)), d.IntentID, d.Refundable)
			var rejected *payments.RejectedError
			switch {
			case errors.As(err, &rejected):
				a.Log.Warn("payout refund refused; recorded as owed", "listing", d.ListingID, "err", err)
			case err != nil:
				return err
			default:
				refunded, refundID = r.Amount, r.ID
			}
		}
		if err := a.Store.Resale.RecordPayout(ctx, d.ListingID, refunded, d.Amount.Amount-refunded, refundID); err != nil {
			return err
		}
		a.tellSeller(ctx, d, refunded)
	}
	return nil
}

// tellSeller emails the seller that their listing sold and how they are
// paid; a failure is logged, never retried into a second payout.
func (a *Booking) tellSeller(ctx context.Context, d store.PayoutDue, refunded int64) {
	if a.Mailer == nil || d.SellerEmail == "" {
		return
	}
	body := fmt.Sprintf("Your ticket sold on Encore's resale. Your payout is %s.\n", money.Format(d.Amount))
	if refunded > 0 {
		body += fmt.Sprintf("%s goes back to the card you bought the ticket with (allow a few days).\n",
			money.Format(money.Money{Amount: refunded, Currency: d.Amount.Currency}))
	}
	if owed := d.Amount.Amount - refunded; owed > 0 {
		body += fmt.Sprintf("%s could not go back to a card and is recorded as owed to you; support will pay it.\n",
			money.Format(money.Money{Amount: owed, Currency: d.Amount.Currency}))
	}
	body += "Your old ticket no longer opens the door.\n"
	m := notify.Message{To: d.SellerEmail, Key: "listing-" + d.ListingID.String() + "-sold", Subject: "Your ticket sold", Body: body}
	if err := a.Mailer.Send(ctx, m); err != nil {
		a.Log.Warn("seller email not queued", "listing", d.ListingID, "err", err)
	}
}
