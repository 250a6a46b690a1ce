// The bank's 3-D Secure check as a modal frame: Complete or Fail answers
// the sandbox's challenge, then the parent closes the modal and reads the
// intent's outcome.
'use strict';
const clientSecret = params.get('client_secret') || '';
const buttons = [document.getElementById('complete'), document.getElementById('fail')];

retrieveIntent(clientSecret).then(r => {
  if (r.error) { document.getElementById('error').textContent = r.error.message; return; }
  const pi = r.paymentIntent;
  // The currency's own decimals say how many minor units make one, as in
  // the app's money().
  const f = new Intl.NumberFormat(undefined, { style: 'currency', currency: pi.currency.toUpperCase() });
  document.getElementById('amount').textContent = f.format(pi.amount / 10 ** f.resolvedOptions().maximumFractionDigits);
});

async function answer(action) {
  for (const b of buttons) b.disabled = true;
  const res = await fetch('/checkout/' + encodeURIComponent(intentID(clientSecret)) + '/challenge', {
    method: 'POST', credentials: 'omit',
    headers: { Accept: 'application/json', 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_secret: clientSecret, action }).toString(),
  }).catch(() => null);
  if (!res || (!res.ok && res.status >= 500)) {
    document.getElementById('error').textContent = 'The bank could not be reached. Try again.';
    for (const b of buttons) b.disabled = false;
    return;
  }
  emit('challengeDone', { action });
}

buttons[0].addEventListener('click', () => answer('complete'));
buttons[1].addEventListener('click', () => answer('fail'));
// The buttons show before this script has loaded; until now a press did
// nothing, so they start disabled.
for (const b of buttons) b.disabled = false;
serve({});
