// The hidden controller frame: API calls that carry no card data.
'use strict';
serve({
  retrievePaymentIntent: d => retrieveIntent(d.clientSecret),
});
