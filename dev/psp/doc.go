// Package psp is a Stripe-compatible payment sandbox with fault injection.
//
// It runs as `encore psp` (default 127.0.0.1:12111) and inside `encore dev`.
// stripe-go talks to it unchanged: point a backend at it and use the secret
// key from Config.APIKey (default "sk_test_encore_sandbox"):
//
//	backends := stripe.NewBackendsWithConfig(&stripe.BackendConfig{URL: stripe.String("http://127.0.0.1:12111")})
//	sc := stripe.NewClient("sk_test_encore_sandbox", stripe.WithBackends(backends))
//
// Requests are form-encoded as Stripe's (metadata[k]=v, expand[0]=x) and
// authenticated with "Authorization: Bearer <key>" (HTTP Basic with the key
// as user name also works). A wrong or missing key gets 401 with a Stripe
// error object. Responses carry Request-Id and Stripe-Version; the event
// api_version is stripe.APIVersion of the linked stripe-go (see APIVersion),
// so webhook.ConstructEvent accepts the events with default options.
//
// # Endpoints
//
//	POST /v1/payment_intents                 amount, currency, capture_method (automatic|automatic_async|manual),
//	                                         payment_method, confirm, metadata[...], description, return_url,
//	                                         receipt_email, confirmation_method, expand[]
//	GET  /v1/payment_intents/{id}            expand[]=latest_charge|payment_method
//	POST /v1/payment_intents/{id}            update: metadata, description, amount, currency, payment_method, capture_method
//	POST /v1/payment_intents/{id}/confirm    payment_method, return_url, capture_method
//	POST /v1/payment_intents/{id}/capture    amount_to_capture, metadata
//	POST /v1/payment_intents/{id}/cancel     cancellation_reason
//	GET  /v1/payment_intents                 limit, starting_after, ending_before, created[gt|gte|lt|lte]
//	GET  /v1/payment_intents/search          query (e.g. metadata['booking_id']:'B1' AND status:'succeeded'), limit, page
//	POST /v1/refunds                         payment_intent or charge, amount, reason, metadata
//	GET  /v1/refunds/{id}
//	GET  /v1/refunds                         payment_intent, charge, limit, starting_after, ending_before
//	GET  /v1/charges/{id}
//	GET  /v1/disputes                       charge, payment_intent, limit, starting_after, ending_before (disputes.go)
//	GET  /v1/disputes/{id}
//	POST /v1/disputes/{id}                  evidence[uncategorized_text]=winning_evidence|losing_evidence closes it won|lost
//	POST /v1/disputes/{id}/close            accepts it: lost
//	POST /v1/payment_methods                 type=card, card[number], card[exp_month], card[exp_year], card[cvc],
//	                                         metadata[...]: a card PaymentMethod "pm_..." (see Test cards)
//	GET  /v1/payment_methods/{id}            a test payment method below or a created one (card.fingerprint included)
//	GET  /v1/events/{id}                     the most recent 10,000 events are kept
//	GET  /v1/events                          type (or "payment_intent.*"), types[], limit, starting_after, ending_before
//	GET  /checkout/{id}?client_secret=...    hosted test checkout page (pick a test card and pay)
//	POST /checkout/{id}                      client_secret, payment_method
//	GET  /checkout/{id}/challenge            3-D Secure challenge page (the next_action redirect URL)
//	POST /checkout/{id}/challenge            action=complete|fail; send "Accept: application/json" to get the intent as JSON
//	GET  /healthz
//	GET  /_sandbox/faults                    the runtime fault switches (see Faults)
//	POST /_sandbox/faults                    application/json: the switches to change
//
// Statuses follow Stripe: requires_payment_method, requires_confirmation,
// requires_action, requires_capture, succeeded, canceled. client_secret is
// "pi_..._secret_...".
//
// # Test cards
//
// These test payment methods succeed (requires_capture with manual capture,
// otherwise succeeded):
//
//	pm_card_visa                 visa 4242, credit
//	pm_card_visa_debit           visa 5556, debit
//	pm_card_mastercard           mastercard 4444, credit
//	pm_card_mastercard_debit     mastercard 8210, debit
//	pm_card_mastercard_prepaid   mastercard 5100, prepaid
//	pm_card_amex                 amex 8431, credit
//	pm_card_discover             discover 1117, credit
//	pm_card_diners               diners 0004, credit
//	pm_card_jcb                  jcb 0505, credit
//	pm_card_unionpay             unionpay 0005, credit
//
// and so do these Visa credit cards issued in one country (card.country):
//
//	pm_card_us 4242   pm_card_ca 0000   pm_card_mx 8001   pm_card_br 0002
//	pm_card_gb 0000   pm_card_ie 0005   pm_card_de 0016   pm_card_fr 0003
//	pm_card_nl 0002   pm_card_be 0004   pm_card_at 0008   pm_card_lu 0006
//	pm_card_es 0007   pm_card_it 0008   pm_card_pt 0007   pm_card_dk 0001
//	pm_card_se 0008   pm_card_fi 0001   pm_card_no 0007   pm_card_ch 0009
//	pm_card_pl 0005   pm_card_jp 0003   pm_card_au 0006   pm_card_nz 0008
//	pm_card_sg 0003   pm_card_hk 0004
//
// These fail or need a challenge:
//
//	pm_card_chargeDeclined                   402 card_error, code card_declined, decline_code generic_decline
//	pm_card_chargeDeclinedInsufficientFunds  402 card_error, code card_declined, decline_code insufficient_funds
//	pm_card_chargeDeclinedFraudulent         402 card_error, code card_declined, decline_code fraudulent
//	pm_card_chargeDeclinedExpiredCard        402 card_error, code expired_card
//	pm_card_chargeDeclinedIncorrectCvc       402 card_error, code incorrect_cvc
//	pm_card_chargeDeclinedProcessingError    402 card_error, code processing_error
//	pm_card_createDispute                    visa 0259 (4000000000000259): pays, then Config.DisputeDelay after
//	                                         the capture a dispute opens (reason fraudulent): see disputes.go
//	pm_card_threeDSecure2Required, pm_card_authenticationRequired
//	                                         requires_action with next_action.redirect_to_url.url =
//	                                         <base>/checkout/<id>/challenge until the challenge is completed
//
// Every test card has a card.fingerprint wherever the sandbox renders the
// card: the PaymentMethod (GET /v1/payment_methods/{id}, expand[]=payment_method,
// last_payment_error.payment_method) and a charge's
// payment_method_details.card. As at Stripe, the fingerprint belongs to the
// card number, not to the PaymentMethod: it is 16 alphanumeric characters,
// stable across calls, restarts and sandbox instances, equal for two fans
// paying with pm_card_visa (they share a card) and different between cards.
// pm_card_us is Stripe's 4242 card, so it shares pm_card_visa's fingerprint;
// every other test card has its own.
//
// Any card number makes a PaymentMethod too, usable wherever a test method
// is (payment_method on create, update and confirm, expand[]=payment_method,
// the charge's payment_method_details.card):
//
//	pm, err := sc.V1PaymentMethods.Create(ctx, &stripe.PaymentMethodCreateParams{
//		Type: stripe.String("card"),
//		Card: &stripe.PaymentMethodCreateCardParams{Number: stripe.String("4000000000000002"),
//			ExpMonth: stripe.Int64(12), ExpYear: stripe.Int64(2034), CVC: stripe.String("123")},
//	})
//
// The number must be 12 to 19 digits and pass the Luhn check, else a 402
// card_error with param card[number] and code invalid_number (not digits,
// wrong length) or incorrect_number (Luhn); card[exp_month] 1-12 and the
// expiry not in the past (two-digit years are 20xx), else invalid_expiry_month
// or invalid_expiry_year; card[cvc], optional, 3 or 4 digits, else
// invalid_cvc. A missing number, month or year is a 400 parameter_missing;
// only type=card is taken. The number of a test card above gives its
// behaviour (4000000000000002 declines like pm_card_chargeDeclined,
// 4000000000003220 needs 3-D Secure, 4000000760000002 is Brazilian); any
// other valid number is a credit card that succeeds, with brand visa (4),
// mastercard (51-55, 2221-2720), amex (34, 37), discover (6011, 65) or
// unknown. last4 and the fingerprint come from the number, so a created
// 4242424242424242 shares pm_card_visa's fingerprint and two different
// numbers never share one. Load tests create one card per fan this way
// (any Luhn-valid number, e.g. a per-fan prefix plus a check digit), so a
// fraud rule counting accounts per fingerprint sees as many cards as fans.
// Created methods are sandbox state (they survive a restart with
// Config.StatePath); the number and CVC are not stored, not even in
// idempotency records, which keep a hash of them. As at Stripe, creating
// one emits no event.
//
// A decline leaves the intent in requires_payment_method with
// last_payment_error set (the 402 error also carries the payment_intent),
// so the same intent can be confirmed again with another card. A failed
// challenge does the same with code payment_intent_authentication_failure.
// Refunding an intent that was not captured is a 400 invalid_request_error
// (code charge_not_refundable): cancel it to void the authorisation.
//
// # Idempotency
//
// As at Stripe, a POST with an Idempotency-Key header stores its result
// (successes and errors raised while executing, such as declines; not
// parameter validation errors) for 24 hours, scoped to the API key. The
// same key with the same endpoint and parameters replays the stored status
// and body with "Idempotent-Replayed: true" and "Original-Request"; with
// other parameters or another endpoint it is a 400 idempotency_error; while
// the first request is still executing it is a 409 idempotency_error with
// code idempotency_key_in_use and "Stripe-Should-Retry: true". Note that
// stripe-go v85 does not retry typed API errors (it retries network errors,
// and 429 lock_timeout), so the caller decides when to retry a 409.
//
// # Webhooks
//
// Every state change records an event ("evt_...", object "event",
// api_version APIVersion, data.object = the full object at that moment,
// request.id and request.idempotency_key of the causing call):
//
//	payment_intent.created
//	payment_intent.requires_action            3-D Secure needed
//	payment_intent.amount_capturable_updated  authorised, manual capture (requires_capture)
//	payment_intent.succeeded                  captured (or authorised with automatic capture)
//	payment_intent.payment_failed             declined, or 3-D Secure failed
//	payment_intent.canceled
//	refund.created                            data.object is the refund
//	charge.refunded                           data.object is the charge (amount_refunded, refunded)
//	charge.dispute.created                    data.object is the dispute (needs_response)
//	charge.dispute.updated                    evidence submitted that does not decide it (under_review)
//	charge.dispute.closed                     won or lost
//
// When Config.WebhookURL is set, events (filtered by Config.EnabledEvents)
// are POSTed there with "Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256 of
// "<t>.<payload>" keyed by Config.WebhookSecret>" (see Sign), freshly signed
// for each attempt. Deliveries for one PaymentIntent go one at a time in
// event order; a non-2xx answer or network error is retried after
// Delivery.InitialBackoff, doubling up to Delivery.MaxBackoff, for
// Delivery.MaxAttempts attempts. Pending deliveries are part of the state
// and resume after a restart.
//
// # Faults
//
// Configured rates (Config.Faults, drawn from a generator seeded with Seed):
//
//	Latency                  added to every API call
//	ServerErrorRate          500 api_error before acting (nothing happens, not stored for idempotency: a retry is safe)
//	TimeoutAfterSuccessRate  confirm/capture (including create with confirm=true) succeeds, the response is lost
//	DuplicateWebhookRate     the event is delivered twice (same id, same payload)
//	OutOfOrderWebhookRate    the event is held back until a later event of the same intent was
//	                         delivered (or OutOfOrderHold passed), so the later one arrives first
//	WebhookDelay             wait before the first delivery attempt of each event
//
// A lost response is stored for idempotency before it is lost. In
// TimeoutHold mode (default) the sandbox keeps the request open until the
// client gives up, TimeoutHold (default 30s) passes or the server stops,
// then closes the connection without answering. In TimeoutDrop mode it
// closes the connection at once; net/http and stripe-go then retry with the
// same Idempotency-Key and receive the replayed response (net/http treats a
// request carrying Idempotency-Key as replayable on a reused keep-alive
// connection; stripe-go retries network errors up to MaxNetworkRetries).
// The same happens when a hold ends before the client gives up, so to make
// a client see the timeout, give it a deadline shorter than the hold (a
// context deadline is final: stripe-go does not retry it). Either way the
// intent has moved on: retrieve it, search it by metadata, or retry with
// the same Idempotency-Key to learn the outcome.
//
// Per request, the header
//
//	Encore-Sandbox-Fault: <directive>[, <directive>...]
//
// (stripe-go: params.Headers = http.Header{"Encore-Sandbox-Fault": {"server_error"}})
// injects faults into that one call, with directives:
//
//	timeout_after_success[=hold|drop|<duration>]  the call acts, its 2xx response is lost
//	server_error                                  500 before acting
//	latency=200ms                                 extra latency
//	duplicate_webhook                             events of this call are delivered twice
//	out_of_order_webhook                          the first event of this call waits for the next event of the intent
//	delay_webhook=2s                              events of this call wait before delivery
//
// The same directives in the metadata key "sandbox_fault" of a PaymentIntent
// (set on create or update) apply to every later mutating call on that
// intent (confirm, capture, cancel, refunds) and to the webhooks those calls
// and the checkout pages emit. The create call itself only takes the
// webhook directives (duplicate_webhook, out_of_order_webhook,
// delay_webhook). The update endpoint ignores them, so
// "metadata[sandbox_fault]=" removes the fault. Replays of stored
// idempotent results never fail through these directives and are never
// lost (an unavailable API, below, answers 503 to replays too).
//
// Runtime switches (the Faults type; SetFaults and GetFaults are the Go
// client) are served on the sandbox's own listener at /_sandbox/faults,
// outside /v1/: GET answers the switches in force, POST with Content-Type
// application/json changes those its object names and answers the result:
//
//	curl -s localhost:12111/_sandbox/faults -H 'Content-Type: application/json' -d '{"capture_unavailable":true}'
//
//	authorise_unavailable       creating and confirming PaymentIntents (the hosted checkout and
//	                            3-D Secure pages' answers too)
//	capture_unavailable         capturing
//	refund_unavailable          creating refunds
//	void_unavailable            cancelling an intent (voiding its authorisation: not a refund,
//	                            so refund_unavailable leaves it alone)
//	timeout_after_success_rate  0..1, the share of confirm and capture calls whose success is lost,
//	                            on top of Config.Faults (encore drill psp-timeout)
//
// While a switch is on, every call of its kind answers at once, before
// idempotency replay, latency or any other fault, with 503 and an api_error
// object, as Stripe answers when its API is unavailable, and
// "Stripe-Should-Retry: true". Nothing is done and nothing is stored under
// the Idempotency-Key, so the same call with the same key acts once the
// switch is off. A switch applies to every request that arrives after the
// POST was answered; switches live in memory (a restart turns them off). Note
// that stripe-go v85 never retries a 503 that carries a Stripe error object,
// whatever MaxNetworkRetries says (it retries only a 429 lock_timeout among
// typed API errors): the caller sees each 503 as a *stripe.Error with
// HTTPStatusCode 503 and Type api_error, and retries by itself (the booking
// saga's activities do, with the same key). A body that is not JSON is 415,
// bad JSON or an unknown switch 400, both as application/problem+json. The
// switches answer a loopback peer, or one presenting the sandbox's API key
// as a Bearer token (a sandbox listening beyond loopback, as in compose).
//
// # State
//
// With Config.StatePath set, intents, charges, refunds, created payment
// methods, idempotency keys, recent events and pending deliveries survive a
// restart: see store.go for
// the snapshot-plus-journal format.
package psp
