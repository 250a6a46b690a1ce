package payments

import (
	"context"

	"github.com/stripe/stripe-go/v85"
)

// CardSummary is the brand ("visa") and last four digits of the card that
// paid the intent, as its latest charge's payment_method_details.card says:
// what a receipt shows. Both are empty when the intent has no charge yet or
// was not paid by card.
func (c *Client) CardSummary(ctx context.Context, intentID string) (brand, last4 string, err error) {
	p := &stripe.PaymentIntentRetrieveParams{}
	c.params(&p.Params, "")
	p.AddExpand("latest_charge")
	pi, err := c.sc.V1PaymentIntents.Retrieve(ctx, intentID, p)
	if err != nil {
		return "", "", classify(err)
	}
	ch := pi.LatestCharge
	if ch == nil || ch.PaymentMethodDetails == nil || ch.PaymentMethodDetails.Card == nil {
		return "", "", nil
	}
	return string(ch.PaymentMethodDetails.Card.Brand), ch.PaymentMethodDetails.Card.Last4, nil
}
