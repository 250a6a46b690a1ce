// The ticket wallet: a ticket's rotating entry code computed on this device,
// so it keeps changing at a door with no signal. The server hands this
// device a key for the ticket (GET /v1/tickets/{id}/wallet): never the
// ticket's secret, and opening the ticket on another device makes this
// device's key useless (the server says so at once; the gate learns it at
// its next manifest delta). The key is kept in localStorage beside what the
// ticket page shows, so a page reopened offline still has it.
import { get, token } from './api.js';
import qrcode from './vendor/qrcode-generator/qrcode.js';

const prefix = 'wallet:';

// open fetches this device's key for ticket t and keeps it with the
// ticket's label and event for offline use. It moves the ticket to this
// device: the page calls it only for a ticket no device holds yet, one
// this device holds, or when the fan asks to move it here.
export async function open(t) {
  const w = await get(`/v1/tickets/${encodeURIComponent(t.id)}/wallet`);
  const kept = { ...w, label: t.label || '', seat_id: t.seat_id || '', event: t.event || null, booking_id: t.booking_id || '' };
  localStorage.setItem(prefix + t.id, JSON.stringify(kept));
  return kept;
}

// status asks, without moving the ticket, whether this device may show it:
// it throws the API's problem (409 ticket-on-another-device, 404 for a
// revoked ticket) when not.
export async function status(t) {
  await get(`/v1/tickets/${encodeURIComponent(t.id)}/qr`);
}

// stored is the kept wallet of ticket id, or null.
export function stored(id) {
  try { return JSON.parse(localStorage.getItem(prefix + id) || 'null'); } catch { return null; }
}

// all lists the kept wallets, for the tickets page offline.
export function all() {
  const out = [];
  for (let i = 0; i < localStorage.length; i++) {
    const k = localStorage.key(i);
    if (k && k.startsWith(prefix)) { const w = stored(k.slice(prefix.length)); if (w) out.push(w); }
  }
  return out;
}

// forget drops a ticket's key: it was moved to another device or revoked.
export function forget(id) { localStorage.removeItem(prefix + id); }

// forgetAll drops every key on sign-out: the next fan on this device gets
// none of them.
export function forgetAll() { for (const w of all()) forget(w.ticket_id); }

const keys = new Map(); // hex key -> CryptoKey

async function hmacKey(hex) {
  let k = keys.get(hex);
  if (!k) {
    const raw = new Uint8Array(hex.match(/../g).map(b => parseInt(b, 16)));
    k = await crypto.subtle.importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    keys.set(hex, k);
  }
  return k;
}

// code is the payload w shows at time ms (epoch milliseconds) and when it
// stops being current: <ticket>.<window>.<generation>.<hex HMAC-SHA256 of
// "<ticket>:<window>">, the window being Unix seconds / period.
export async function code(w, ms) {
  const period = w.period_seconds || 15;
  const win = Math.floor(ms / 1000 / period);
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', await hmacKey(w.key), new TextEncoder().encode(`${w.ticket_id}:${win}`)));
  const hex = [...mac].map(b => b.toString(16).padStart(2, '0')).join('');
  return { payload: `${w.ticket_id}.${win}.${w.generation}.${hex}`, expires: (win + 1) * period * 1000 };
}

// qrDataURL draws a payload as a QR image (medium error correction, as the
// server's own codes).
export function qrDataURL(payload) {
  const q = qrcode(0, 'M');
  q.addData(payload, 'Byte');
  q.make();
  const modules = q.getModuleCount() + 8;
  return q.createDataURL(Math.max(2, Math.floor(320 / modules)), 4);
}

// signedIn says whether the wallet can ask the server (an offline page
// shows kept keys without a session).
export const signedIn = () => !!token();

