// The sandbox's side of the stand-in's frames: the page that framed it is
// named in the fragment (origin), replies and events go to it alone, and
// API calls go to the sandbox itself (this frame's own origin) with the
// publishable key.
'use strict';
const TAG = '__encoreSandboxStripe';
const params = new URLSearchParams(location.hash.slice(1));
const parentOrigin = params.get('origin') || '';
const publishableKey = params.get('pk') || '';

function emit(event, payload) {
  if (parentOrigin) parent.postMessage({ [TAG]: true, event, payload: payload || {} }, parentOrigin);
}

// serve answers the parent's calls with handlers[type](message).
function serve(handlers) {
  window.addEventListener('message', async e => {
    if (e.source !== parent || e.origin !== parentOrigin || !e.data || e.data[TAG] !== true || !e.data.id) return;
    const h = handlers[e.data.type];
    let result;
    try {
      result = h ? await h(e.data) : { error: { type: 'invalid_request_error', message: 'Unknown call ' + e.data.type + '.' } };
    } catch (err) {
      result = { error: { type: 'api_connection_error', message: 'The payment sandbox could not be reached: ' + err.message } };
    }
    parent.postMessage({ [TAG]: true, reply: e.data.id, result }, parentOrigin);
  });
  emit('ready');
}

// api calls the sandbox's API as Stripe.js does, with the publishable key;
// it resolves to {ok: body} or {error: Stripe's error object}.
async function api(method, path, form) {
  const headers = { Authorization: 'Bearer ' + publishableKey };
  let body;
  if (form) {
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(form).toString();
  }
  const res = await fetch(path, { method, headers, body, credentials: 'omit' });
  let json;
  try { json = await res.json(); } catch (_) { json = null; }
  if (res.ok && json) return { ok: json };
  return { error: (json && json.error) || { type: 'api_error', message: 'The payment sandbox answered ' + res.status + '.' } };
}

function intentID(clientSecret) {
  return String(clientSecret || '').split('_secret_')[0];
}

async function retrieveIntent(clientSecret) {
  const r = await api('GET', '/v1/payment_intents/' + encodeURIComponent(intentID(clientSecret)) +
    '?client_secret=' + encodeURIComponent(clientSecret));
  return r.error ? { error: r.error } : { paymentIntent: r.ok };
}
