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
	brand, last4 = cardOf(pi.LatestCharge)
	return brand, last4, nil
}

// cardOf is the brand and last four of the card of a charge, when it is
// expanded and paid by card.
func cardOf(ch *stripe.Charge) (brand, last4 string) {
	if ch == nil || ch.PaymentMethodDetails == nil || ch.PaymentMethodDetails.Card == nil {
		return "", ""
	}
	return string(ch.PaymentMethodDetails.Card.Brand), ch.PaymentMethodDetails.Card.Last4
}
