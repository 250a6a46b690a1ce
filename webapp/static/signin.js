// Sign-in by OpenID Connect redirect: the authorization code flow with PKCE
// (RFC 7636) for a public client, which has no secret. "Sign in" sends the
// browser to the issuer's authorization endpoint; the issuer sends it back
// to this app's "/" with ?code=&state=, and the app exchanges the code at
// the token endpoint with the verifier only this tab knows. The API tells
// the app whether to do this (GET /v1/auth/config): with no client ID it
// keeps the demo form.
import { keepSession } from './api.js';
import { t } from './i18n.js';

let config;

// signInConfig is the API's sign-in settings, fetched once; redirect is
// true when an issuer and a client ID are configured. Should the route fail,
// the app offers the demo form, as it always has.
export function signInConfig() {
  config ??= fetch('/v1/auth/config')
    .then(r => (r.ok ? r.json() : {}))
    .catch(() => ({}))
    .then(c => ({ ...c, redirect: !!(c.issuer && c.client_id), scopes: c.scopes || 'openid email profile' }));
  return config;
}

const redirectURI = () => location.origin + '/';

const b64url = bytes => btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
const random = n => b64url(crypto.getRandomValues(new Uint8Array(n)));

// discovery reads the issuer's discovery document (OpenID Connect Discovery
// 1.0): it must name the issuer it was fetched for.
async function discovery(issuer) {
  const res = await fetch(issuer.replace(/\/$/, '') + '/.well-known/openid-configuration').catch(() => null);
  const doc = res && res.ok ? await res.json().catch(() => null) : null;
  if (!doc || doc.issuer !== issuer || !doc.authorization_endpoint || !doc.token_endpoint) {
    throw new Error(t('The sign-in service cannot be reached right now. Please try again in a moment.'));
  }
  return doc;
}

// startSignIn sends the browser to the issuer. The PKCE verifier, state and
// nonce stay in this tab's sessionStorage until it comes back, with the view
// to return to.
export async function startSignIn() {
  if (!crypto.subtle) throw new Error(t('Signing in needs a secure connection (HTTPS). Please open this site over HTTPS.'));
  const cfg = await signInConfig();
  const doc = await discovery(cfg.issuer);
  const verifier = random(32);
  const challenge = b64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
  const state = random(16), nonce = random(16);
  sessionStorage.setItem('oidc', JSON.stringify({ state, nonce, verifier, back: location.hash }));
  const u = new URL(doc.authorization_endpoint);
  for (const [k, v] of Object.entries({ response_type: 'code', client_id: cfg.client_id, redirect_uri: redirectURI(),
    scope: cfg.scopes, state, nonce, code_challenge: challenge, code_challenge_method: 'S256' })) u.searchParams.set(k, v);
  location.assign(u.href);
}

// claims reads a JWT's payload without verifying it: the API verifies the
// token it is sent; the app only chooses which one to send.
function claims(jwt) {
  const part = String(jwt || '').split('.');
  if (part.length !== 3) return null;
  try { return JSON.parse(atob(part[1].replace(/-/g, '+').replace(/_/g, '/'))); } catch { return null; }
}
const names = (c, aud) => c && [].concat(c.aud || []).includes(aud);

// issuerMessage is the sentence for an issuer's ?error= (RFC 6749 section
// 4.1.2.1).
function issuerMessage(code, description) {
  if (code === 'access_denied') return t('Sign-in was cancelled. You can sign in again whenever you like.');
  if (code === 'temporarily_unavailable' || code === 'server_error') return t('The sign-in service is busy. Please wait a moment and sign in again.');
  return t('The sign-in service refused the sign-in ({why}). Please sign in again; if it keeps failing, contact support.', { why: description || code });
}

// finishSignIn completes a redirect back from the issuer, if this page load
// is one: it cleans the address bar first (a reload must not replay the
// code), checks state, exchanges the code and keeps the token as the demo
// login does. It returns whether a sign-in finished; a failure throws an
// Error whose message a fan can act on.
export async function finishSignIn() {
  const q = new URLSearchParams(location.search);
  if (!q.has('code') && !q.has('error')) return false;
  let saved = null;
  try { saved = JSON.parse(sessionStorage.getItem('oidc') || 'null'); } catch { /* a damaged entry is none */ }
  sessionStorage.removeItem('oidc');
  history.replaceState(null, '', location.pathname + ((saved && saved.back) || location.hash));
  if (q.has('error')) throw new Error(issuerMessage(q.get('error'), q.get('error_description')));
  if (!saved || q.get('state') !== saved.state) {
    throw new Error(t('This sign-in did not start in this tab, or was already used. Please sign in again.'));
  }
  const cfg = await signInConfig();
  const doc = await discovery(cfg.issuer);
  const res = await fetch(doc.token_endpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code: q.get('code'), redirect_uri: redirectURI(),
      client_id: cfg.client_id, code_verifier: saved.verifier }),
  }).catch(() => null);
  const out = res ? await res.json().catch(() => ({})) : {};
  if (!res || !res.ok) {
    throw new Error(out.error_description ? t('The sign-in could not be completed ({why}). Please sign in again.', { why: out.error_description }) : t('The sign-in could not be completed. Please sign in again.'));
  }
  // This sign-in sent a nonce: its answer must carry an ID token with that
  // nonce, whichever token the app then keeps. An answer without one (an
  // access token alone) could be a replayed or injected code's.
  const id = claims(out.id_token);
  if (!id || !saved.nonce || id.nonce !== saved.nonce) throw new Error(t('The sign-in answer did not match this sign-in. Please sign in again.'));
  // Which token the API gets: the access token when it is a JWT naming the
  // API's audience (an access token is what OAuth means for a resource
  // server, and it may carry roles an ID token does not); otherwise the ID
  // token. Many issuers hand out opaque access tokens, or ones for their
  // own user-info API, which the API cannot verify; an ID token is always
  // a JWT and names the client ID as its audience, so with such an issuer
  // ENCORE_OIDC_AUDIENCE must be the client ID.
  const access = claims(out.access_token);
  const tok = names(access, cfg.audience) || !names(id, cfg.audience) ? out.access_token : out.id_token;
  const me = await fetch('/v1/me', { headers: { Authorization: 'Bearer ' + tok } }).catch(() => null);
  if (!me || !me.ok) {
    throw new Error(t("You signed in, but this site does not accept the sign-in service's token (its issuer or audience differs from the site's settings). Please contact support."));
  }
  const who = await me.json();
  keepSession(tok, who.email || who.user_id);
  return true;
}
