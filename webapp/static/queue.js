// The waiting room of a metered event, as the fan's browser lives it: join
// (solving the proof of work when the room asks for one), then follow the
// queue socket, which pushes the same states as GET /queue. The socket gets a
// heartbeat with jitter (the room treats metronome-regular beats as a bot's);
// a dropped socket reconnects with capped exponential backoff and polls the
// state meanwhile, so a flaky network never loses the fan's place.
import { request, token, ProblemError, savePass } from './api.js';

const MIN_BACKOFF = 1000, MAX_BACKOFF = 30000;

// solve finds a solution whose SHA-256(token ":" solution) starts with
// difficulty zero bits, counting in base 36 as the room's own solver does.
export async function solve(challenge, signal) {
  const enc = new TextEncoder();
  for (let i = 0; ; i++) {
    if (signal && signal.aborted) throw new Error('aborted');
    const s = i.toString(36);
    const h = new Uint8Array(await crypto.subtle.digest('SHA-256', enc.encode(challenge.token + ':' + s)));
    if (leadingZeroBits(h) >= challenge.difficulty) return s;
  }
}

function leadingZeroBits(h) {
  let n = 0;
  for (const b of h) {
    if (b === 0) { n += 8; continue; }
    return n + Math.clz32(b) - 24;
  }
  return n;
}

// Queue follows one fan's place in one event's line; onState gets every
// state object ({status: waiting|admitted|sold_out|offered, ...}) and
// onConnection 'live', 'reconnecting' or 'polling'.
export class Queue {
  constructor(eventID, { onState, onConnection = () => {}, onError = () => {} }) {
    Object.assign(this, { eventID, onState, onConnection, onError });
    this.path = `/v1/events/${encodeURIComponent(eventID)}/queue`;
    this.backoff = MIN_BACKOFF;
    this.heartbeat = 5;
    this.closed = false;
    this.abort = new AbortController();
  }

  // join enters the line (or keeps the fan's place), then goes live.
  async start() {
    let st;
    try {
      st = await request('POST', this.path, {});
    } catch (err) {
      if (!(err instanceof ProblemError) || !String(err.problem.type).endsWith('/challenge-required') || !err.problem.challenge) throw err;
      this.onConnection('checking');
      const c = err.problem.challenge;
      const solution = await solve(c, this.abort.signal);
      st = await request('POST', this.path, {}, { 'X-Queue-Challenge': c.token, 'X-Queue-Solution': solution });
    }
    this.apply(st);
    if (!this.closed && st.status === 'waiting') this.connect();
  }

  apply(st) {
    if (this.closed) return;
    if (st.heartbeat_seconds) this.heartbeat = st.heartbeat_seconds;
    if ((st.status === 'admitted' || st.status === 'offered') && st.pass) {
      savePass(this.eventID, st.pass, st.pass_expires_at);
      this.close();
    }
    if (st.status === 'sold_out') this.close();
    this.onState(st);
  }

  connect() {
    if (this.closed) return;
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(`${proto}//${location.host}${this.path}/ws?access_token=${encodeURIComponent(token())}`);
    this.ws = ws;
    let opened = false;
    ws.onopen = () => { opened = true; this.backoff = MIN_BACKOFF; this.stopPolling(); this.onConnection('live'); this.beat(); };
    ws.onmessage = m => {
      try { this.apply(JSON.parse(m.data)); } catch (err) { this.onError(err); }
    };
    ws.onclose = ev => {
      clearTimeout(this.beatTimer);
      if (this.closed) return;
      if (ev.code === 4001) { this.close(); this.onError(new ProblemError({ type: '/problems/admitted-elsewhere' }, 409)); return; }
      // 4000: dropped from the line (or the admission ended): join again.
      if (ev.code === 4000) { this.retry(() => this.start().catch(err => this.onError(err))); return; }
      if (!opened) this.poll(); // refused before the upgrade: the poll says why
      this.retry(() => this.connect());
    };
  }

  // beat sends a heartbeat every 70-100% of the interval the room asked for.
  beat() {
    const wait = this.heartbeat * 1000 * (0.7 + Math.random() * 0.3);
    this.beatTimer = setTimeout(() => {
      if (this.ws && this.ws.readyState === WebSocket.OPEN) { this.ws.send('{"type":"heartbeat"}'); this.beat(); }
    }, wait);
  }

  retry(fn) {
    const wait = this.backoff * (0.5 + Math.random() * 0.5);
    this.backoff = Math.min(MAX_BACKOFF, this.backoff * 2);
    this.onConnection('reconnecting', Math.round(wait / 1000));
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(fn, wait);
    this.poll();
  }

  // poll keeps the state (and the heartbeat) going over plain HTTP while
  // the socket is down.
  poll() {
    if (this.pollTimer || this.closed) return;
    const once = async () => {
      try { this.apply(await request('GET', this.path)); } catch (err) { this.onError(err); }
      if (!this.closed && this.pollTimer) this.pollTimer = setTimeout(once, this.heartbeat * 1000);
    };
    this.pollTimer = setTimeout(once, 0);
  }

  stopPolling() { clearTimeout(this.pollTimer); this.pollTimer = null; }

  close() {
    this.closed = true;
    this.abort.abort();
    clearTimeout(this.beatTimer); clearTimeout(this.retryTimer); this.stopPolling();
    if (this.ws) { this.ws.onclose = null; this.ws.close(); }
  }
}
