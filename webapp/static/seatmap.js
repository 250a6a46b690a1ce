// The seat map: every seated section of an event on one canvas, at the
// layout's x, y (venue-wide coordinates; sections whose coordinates overlap,
// grids each starting at 0, are laid side by side instead). Statuses come
// from each section's 2-bit bitmap (seats.bin), refetched when the live
// socket invalidates that section. A frame copies each visible seat's
// sprite (its state drawn once at the current size, in device pixels) into
// one pixel buffer and puts it on the canvas in one call: 20,000 seats cost
// a few milliseconds where 20,000 arcs cost hundreds on a software canvas.
// Frames are coalesced with requestAnimationFrame; seats a few pixels wide
// are plain squares without marks. Keyboard: arrows move between seats,
// Enter or Space toggles, Page Up and Page Down change section. The stage
// and the event's standing areas are drawn beside the seats (on the side of
// the sections' first rows), the areas as buttons that choose a quantity.
import { token } from './api.js';
import { t, locale } from './i18n.js';

export const STATUS = ['available', 'held', 'sold', 'blocked'];
// Drawing order of the states: the four statuses, then the fan's selection.
const STATES = [...STATUS, 'selected'];
const SELECTED = 4;
const COLOURS = { available: '#1e7a3a', held: '#b36b00', sold: '#6b6b75', blocked: '#2b2b30', selected: '#1f5fbf' };
// PRICES colour available seats by price, dearest first, when a map has
// more than one price: dark enough for the white marks and apart from the
// states' colours; prices past the last share it.
const PRICES = ['#1e7a3a', '#0a6a8a', '#6a3fb5', '#94306a'];

const TAU = Math.PI * 2;
const LOD_RADIUS = 2.5;   // seat radius (CSS px) below which seats are squares without marks
const PICK_RADIUS = 4;    // below it a tap zooms in: a seat that small cannot be aimed at
const MAX_RADIUS = 48;    // the closest zoom
const TOUCH_TARGET = 24;  // a finger's target (CSS px, seat to seat) below which a tap zooms in
const LONG_PRESS = 500;   // ms a finger rests on a seat to show its details
const SOCKET_SECTIONS = 16; // sections one live stream may follow (the server's limit)
const KEEP = 120;         // draw times and repaints kept for inspection

// decode reads n 2-bit statuses, four a byte, most significant pair first,
// into out from index at.
export function decode(bytes, n, out = new Uint8Array(n), at = 0) {
  for (let i = 0; i < n; i++) out[at + i] = (bytes[i >> 2] >> (6 - 2 * (i & 3))) & 3;
  return out;
}

// mark adds a state's pattern to the context's path, so state never
// depends on colour alone: held a stroke, sold a cross, blocked a
// bar, selected a tick; available has none.
function mark(p, state, x, y, r) {
  const d = r * 0.55;
  if (state === 'held') { p.moveTo(x - d, y + d); p.lineTo(x + d, y - d); }
  else if (state === 'sold') { p.moveTo(x - d, y - d); p.lineTo(x + d, y + d); p.moveTo(x + d, y - d); p.lineTo(x - d, y + d); }
  else if (state === 'blocked') { p.moveTo(x - d, y); p.lineTo(x + d, y); }
  else if (state === 'selected') { p.moveTo(x - d, y); p.lineTo(x - d / 3, y + d * 0.7); p.lineTo(x + d, y - d * 0.6); }
}

// packed is an opaque #rrggbb colour as one pixel of a Uint32Array over
// canvas pixel bytes (RGBA in memory, whatever the machine's byte order).
function packed(hex) {
  const n = parseInt(hex.slice(1), 16);
  return new Uint32Array(new Uint8ClampedArray([n >> 16, (n >> 8) & 255, n & 255, 255]).buffer)[0];
}

// drawSeat draws one seat with its colour and pattern (the legend uses it).
export function drawSeat(ctx, x, y, r, state) {
  ctx.fillStyle = COLOURS[state] || PRICES[Number(String(state).slice(5))] || COLOURS.available;
  ctx.beginPath();
  ctx.arc(x, y, r, 0, TAU);
  ctx.fill();
  if (r < LOD_RADIUS) return;
  ctx.strokeStyle = '#fff';
  ctx.lineWidth = Math.max(1, r / 4);
  ctx.beginPath();
  mark(ctx, state, x, y, r);
  ctx.stroke();
}

export class SeatMap {
  // el is the container; sections are the event's seated sections ({id,
  // name}, in the event's order; a single section ID works too); onChange
  // gets the selected seats after each change.
  // areas are its standing (general-admission) sections ({id, name,
  // available, capacity, base_price}), drawn as buttons; onArea gets the
  // one pressed.
  constructor(el, eventID, sections, { announce, onChange, max = 6, areas = [], onArea }) {
    if (!Array.isArray(sections)) sections = [{ id: sections, name: '' }];
    Object.assign(this, { el, eventID, announce: announce || (() => {}), onChange: onChange || (() => {}), max, onArea: onArea || (() => {}) });
    this.sections = sections.map((s, k) => ({ id: s.id, name: s.name || '', k, pending: [] }));
    this.byId = new Map(this.sections.map(s => [s.id, s]));
    this.selected = new Set();
    this.focus = -1;
    this.view = { k: 1, x: 0, y: 0 };
    this.version = 0;
    this.sockets = new Set();
    this.drawTimes = [];  // ms per frame drawn, the last KEEP
    this.repaints = [];   // {section, ms, fetch, at}: invalidation arrival to the frame drawn with it (ms), of which the bitmap's fetch
    this.repaintWanted = [];
    this.canvas = document.createElement('canvas');
    this.canvas.tabIndex = 0;
    this.canvas.setAttribute('role', 'application');
    this.canvas.setAttribute('aria-roledescription', t('seat map'));
    this.describe('');
    // Hover details: a mouse resting on a seat names it, its state and price.
    this.tip = document.createElement('div');
    this.tip.className = 'seattip';
    this.tip.setAttribute('aria-hidden', 'true'); // the same words reach screen readers through the focus announcements
    this.tip.hidden = true;
    // The stage, and each standing area as a button over its place on the
    // plan (placed by place, moved with the view by paint).
    this.stageEl = document.createElement('div');
    this.stageEl.className = 'stage';
    this.stageEl.setAttribute('aria-hidden', 'true'); // the map's description says where it is
    this.stageEl.textContent = t('Stage');
    this.stageEl.hidden = true;
    this.areas = areas.map(a => {
      const b = document.createElement('button');
      b.type = 'button'; b.className = 'area'; b.dataset.area = a.id; b.hidden = true;
      const left = a.available > 0;
      // The name read out starts with the words shown (WCAG 2.5.3).
      b.innerHTML = '<span class="aname"></span><span class="aprice"></span><span class="sr-only"></span>';
      b.querySelector('.aname').textContent = a.name;
      b.querySelector('.aprice').textContent = left ? t('Standing') + ' · ' + money(a.base_price) : t('Sold out');
      b.querySelector('.sr-only').textContent = left ? ', ' + t('{left} of {cap} places left. Choose how many tickets.', { left: a.available, cap: a.capacity }) : '';
      if (!left) b.setAttribute('aria-disabled', 'true');
      b.addEventListener('click', () => { if (left) this.onArea(a); else this.announce(t('{name}: standing, sold out', { name: a.name })); });
      return { ...a, el: b };
    });
    el.append(this.canvas, this.tip, this.stageEl, ...this.areas.map(a => a.el));
    el.seatmap = this; // for tests and assistive scripts: the container knows its map
    this.bind();
    // A page leaving for the back-forward cache keeps its sockets open (and
    // counted against the address's socket cap) unless it closes them: they
    // close when the page is hidden and reconnect, and so reset, when it is
    // shown again.
    this.onPageHide = () => { this.suspended = true; this.dropSockets(); };
    this.onPageShow = e => { if (e.persisted && this.suspended && !this.closed) { this.suspended = false; this.connect(); } };
    addEventListener('pagehide', this.onPageHide);
    addEventListener('pageshow', this.onPageShow);
  }

  // describe labels the canvas: how to use it, and where the stage is.
  describe(where) {
    this.canvas.setAttribute('aria-label', t('Seat map of the whole venue.') + (where ? ' ' + where : '') + ' '
      + t('Use the arrow keys to move between seats, Page Up and Page Down to change section, Enter or Space to select a seat, plus and minus to zoom.'));
  }

  base(s) {
    return `/v1/events/${encodeURIComponent(this.eventID)}/sections/${encodeURIComponent(s.id)}`;
  }

  // load fetches every section's seats, draws them (the map is then
  // interactive: performance mark "seatmap:interactive", data-interactive on
  // the canvas), follows the live socket and applies the bitmaps.
  async load() {
    const snaps = await Promise.all(this.sections.map(s => this.fetchSeats(s)));
    performance.mark('seatmap:fetched');
    const n = snaps.reduce((a, snap) => a + snap.seats.length, 0);
    this.seats = new Array(n);
    this.xs = new Float32Array(n);
    this.ys = new Float32Array(n);
    this.status = new Uint8Array(n);
    this.sec = new Uint16Array(n);
    this.index = new Map();
    this.rows = []; // every section's rows, in order: arrays of seat indices
    let at = 0;
    this.sections.forEach((s, k) => {
      const seats = snaps[k].seats;
      s.start = at; s.count = seats.length; s.row0 = this.rows.length;
      let row = null;
      for (const seat of seats) {
        if (!row || this.seats[row[0]].row !== seat.row) { row = []; this.rows.push(row); }
        seat.r = this.rows.length - 1; seat.c = row.length; row.push(at);
        this.seats[at] = seat;
        this.index.set(seat.id, at);
        this.status[at] = Math.max(0, STATUS.indexOf(String(seat.status).toLowerCase()));
        this.sec[at] = k;
        at++;
      }
      s.row1 = this.rows.length;
    });
    this.pricing();
    this.place();
    if (this.wanted) this.showSection(this.wanted, false); else this.fit();
    this.paint();
    performance.mark('seatmap:interactive');
    this.canvas.dataset.interactive = 'true';
    this.connect();
    await this.refresh();
  }

  // pricing sorts the seats' prices, dearest first, into the price tiers
  // available seats are coloured by (priceTiers: {amount, currency,
  // colour}); with one price there are none and available is green.
  pricing() {
    const amounts = [...new Set(this.seats.map(seat => seat.price ? seat.price.amount : 0))].sort((a, b) => b - a);
    this.tier = null;
    this.priceTiers = [];
    if (amounts.length < 2) return;
    const at = new Map(amounts.map((a, k) => [a, Math.min(k, PRICES.length - 1)]));
    this.tier = new Uint8Array(this.seats.length);
    this.seats.forEach((seat, i) => { this.tier[i] = at.get(seat.price ? seat.price.amount : 0); });
    const currency = (this.seats.find(seat => seat.price) || {}).price?.currency;
    // A tier's price category, when its seats share one and no other tier
    // has it (the legend names it then).
    const cats = amounts.map(() => new Set());
    this.seats.forEach((seat, i) => { if (this.tier[i] < cats.length) cats[this.tier[i]].add(seat.category || ''); });
    const named = cats.every(c => c.size === 1 && [...c][0] !== '') && new Set(cats.map(c => [...c][0])).size === cats.length;
    this.priceTiers = amounts.slice(0, PRICES.length).map((amount, k) => ({ amount, currency, colour: PRICES[k],
      category: named ? [...cats[k]][0] : '',
      more: k === PRICES.length - 1 && amounts.length > PRICES.length }));
    this.sprites = new Map();
  }

  // states are the sprites' states: the statuses and the selection, then
  // one available state a price tier.
  states() { return [...STATES, ...this.priceTiers.map((_, k) => 'price' + k)]; }

  async fetchSeats(s) {
    // A cold section may answer 503 while another request fills the cache.
    for (let attempt = 0; ; attempt++) {
      const res = await fetch(this.base(s) + '/seats');
      if (res.ok) return res.json();
      if (attempt >= 3 || res.status < 500) throw new Error(t('The seat map is unavailable right now. Reload the page to try again.'));
      await new Promise(r => setTimeout(r, 200 * (attempt + 1)));
    }
  }

  // place gives each section its radius and its place on the plan. Sections
  // of a venue share one coordinate space; sections whose boxes overlap
  // (grids, each from 0, 0) are laid out in a grid of cells instead.
  place() {
    for (const s of this.sections) {
      let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity, gap = Infinity;
      for (let i = s.start; i < s.start + s.count; i++) {
        const seat = this.seats[i];
        x0 = Math.min(x0, seat.x); y0 = Math.min(y0, seat.y); x1 = Math.max(x1, seat.x); y1 = Math.max(y1, seat.y);
      }
      for (let r = s.row0; r < s.row1; r++) {
        const row = this.rows[r];
        for (let j = 1; j < row.length; j++) {
          const a = this.seats[row[j - 1]], b = this.seats[row[j]];
          const d = Math.hypot(a.x - b.x, a.y - b.y);
          if (d > 0) gap = Math.min(gap, d);
        }
      }
      s.radius = isFinite(gap) ? gap * 0.42 : 0.42;
      s.raw = s.count ? { x0, y0, x1, y1 } : { x0: 0, y0: 0, x1: 0, y1: 0 };
      s.dx = 0; s.dy = 0;
    }
    const shown = this.sections.filter(s => s.count);
    // Do sections share the plan? Seats of different sections at the same
    // place (in one cell of half the smallest seat spacing, so two seats a
    // spacing apart never share one) say they do not.
    const cell = Math.min(...shown.map(s => s.radius / 0.42)) / 2;
    const taken = new Map();
    let clashes = 0;
    for (const s of shown) for (let i = s.start; i < s.start + s.count; i++) {
      const key = Math.round(this.seats[i].x / cell) + ',' + Math.round(this.seats[i].y / cell);
      const owner = taken.get(key);
      if (owner === undefined) taken.set(key, s.k); else if (owner !== s.k) clashes++;
    }
    const overlap = clashes > 0.02 * this.seats.length;
    this.shared = !overlap;
    if (overlap) {
      // Cells as large as the largest section, a gap of two rows between
      // them; as many columns as make the plan fill the canvas best.
      const cw = Math.max(...shown.map(s => s.raw.x1 - s.raw.x0 + 2 * s.radius)) * 1.08 + 1;
      const ch = Math.max(...shown.map(s => s.raw.y1 - s.raw.y0 + 2 * s.radius)) * 1.08 + 1;
      const r = this.canvas.getBoundingClientRect(), aspect = r.width && r.height ? r.width / r.height : 2;
      let cols = 1, best = 0;
      for (let c = 1; c <= shown.length; c++) {
        const fit = Math.min(aspect / (c * cw), 1 / (Math.ceil(shown.length / c) * ch));
        if (fit > best) { best = fit; cols = c; }
      }
      shown.forEach((s, i) => {
        const w = s.raw.x1 - s.raw.x0, h = s.raw.y1 - s.raw.y0;
        s.dx = (i % cols) * cw + (cw - w) / 2 - s.raw.x0;
        s.dy = Math.floor(i / cols) * ch + (ch - h) / 2 - s.raw.y0;
      });
    }
    let X0 = Infinity, Y0 = Infinity, X1 = -Infinity, Y1 = -Infinity;
    for (const s of shown) {
      for (let i = s.start; i < s.start + s.count; i++) {
        this.xs[i] = this.seats[i].x + s.dx; this.ys[i] = this.seats[i].y + s.dy;
      }
      s.box = { x0: s.raw.x0 + s.dx - s.radius, y0: s.raw.y0 + s.dy - s.radius, x1: s.raw.x1 + s.dx + s.radius, y1: s.raw.y1 + s.dy + s.radius };
      X0 = Math.min(X0, s.box.x0); Y0 = Math.min(Y0, s.box.y0); X1 = Math.max(X1, s.box.x1); Y1 = Math.max(Y1, s.box.y1);
    }
    this.box = shown.length ? { x0: X0, y0: Y0, x1: X1, y1: Y1 } : { x0: 0, y0: 0, x1: 1, y1: 1 };
    this.minRadius = Math.min(...shown.map(s => s.radius), Infinity);
    this.maxRadius = Math.max(...shown.map(s => s.radius), 0);
    if (shown.length) this.placeStage(shown[0]);
  }

  // placeStage puts the stage on the side of the first section's first row
  // (row A faces the stage), the standing areas between it and the seats:
  // in the empty space in front of that row when there is room (an arena's
  // floor in its bowl), else beyond the plan's edge; the plan's box grows
  // to hold them.
  placeStage(first) {
    const b = this.box, W = b.x1 - b.x0, H = b.y1 - b.y0, pitch = (this.minRadius || 0.42) / 0.42;
    const row = this.rows[first.row0];
    let rx0 = Infinity, rx1 = -Infinity, rowY = 0;
    for (const i of row) { rx0 = Math.min(rx0, this.xs[i]); rx1 = Math.max(rx1, this.xs[i]); rowY += this.ys[i]; }
    rowY /= row.length;
    const top = rowY <= (b.y0 + b.y1) / 2 || first.row1 - first.row0 < 2;
    const gap = Math.max(pitch, H * 0.03), stageH = Math.max(pitch * 1.2, H * 0.06);
    const areaH = this.areas.length ? Math.max(pitch * 3, H * 0.1) : 0;
    const cx = (b.x0 + b.x1) / 2;
    const sw = Math.min(Math.max((rx1 - rx0) * 1.2, pitch * 6), W * 0.6), aw = Math.min(Math.max(sw * 1.8, pitch * 8), W * 0.9);
    const depth = (this.areas.length ? gap * 2 + areaH : gap) + stageH;
    // band is [y0, y1] at distance d from edge, towards the stage.
    const layout = edge => {
      const band = (d, h) => top ? { y0: edge - d - h, y1: edge - d } : { y0: edge + d, y1: edge + d + h };
      const n = this.areas.length, gx = pitch, w = (aw - gx * (n - 1)) / Math.max(n, 1), x0 = cx - aw / 2;
      const areas = this.areas.map((a, k) => ({ x0: x0 + k * (w + gx), x1: x0 + k * (w + gx) + w, ...band(gap, areaH) }));
      const stage = { x0: cx - sw / 2, x1: cx + sw / 2, ...band(depth - stageH, stageH) };
      return { areas, stage };
    };
    // In front of row A when no seat is in the way, else beyond the plan.
    let at = layout(top ? Math.min(...row.map(i => this.ys[i])) - first.radius : Math.max(...row.map(i => this.ys[i])) + first.radius);
    const x0 = Math.min(at.stage.x0, cx - aw / 2) - pitch, x1 = Math.max(at.stage.x1, cx + aw / 2) + pitch;
    const y0 = Math.min(at.stage.y0, ...at.areas.map(a => a.y0)) - pitch, y1 = Math.max(at.stage.y1, ...at.areas.map(a => a.y1)) + pitch;
    let free = true;
    for (let i = 0; i < this.seats.length && free; i++) {
      const x = this.xs[i], y = this.ys[i];
      if (x > x0 && x < x1 && y > y0 && y < y1) free = false;
    }
    if (!free) at = layout(top ? b.y0 : b.y1);
    this.areas.forEach((a, k) => { a.box = at.areas[k]; });
    this.stage = { ...at.stage, side: top ? 'top' : 'bottom' };
    b.y0 = Math.min(b.y0, this.stage.y0, ...at.areas.map(a => a.y0));
    b.y1 = Math.max(b.y1, this.stage.y1, ...at.areas.map(a => a.y1));
    this.canvas.dataset.stage = this.stage.side;
    this.describe(t(top ? 'The stage is at the top of the map.' : 'The stage is at the bottom of the map.')
      + (this.areas.length ? ' ' + t('Standing areas are buttons between the stage and the seats.') : ''));
  }

  // overlays moves the stage and the standing areas with the view.
  overlays() {
    const v = this.view;
    const put = (el, bx) => {
      const x = bx.x0 * v.k + v.x, y = bx.y0 * v.k + v.y, w = (bx.x1 - bx.x0) * v.k, h = (bx.y1 - bx.y0) * v.k;
      const at = [x, y, w, h, Math.max(9, Math.min(16, h * 0.32))].map(n => n.toFixed(1) + 'px');
      const key = at.join();
      if (el.dataset.at !== key) {
        el.dataset.at = key;
        [el.style.left, el.style.top, el.style.width, el.style.height, el.style.fontSize] = at;
      }
      el.hidden = false;
    };
    if (this.stage) put(this.stageEl, this.stage);
    for (const a of this.areas) if (a.box) put(a.el, a.box);
  }

  size() {
    const r = this.canvas.getBoundingClientRect();
    return { w: r.width || 1, h: r.height || 1 };
  }

  // frame shows a box of the plan, centred, with a margin.
  frame(b, margin = 0.04) {
    const { w, h } = this.size(), bw = Math.max(b.x1 - b.x0, 1e-3), bh = Math.max(b.y1 - b.y0, 1e-3);
    const v = this.view;
    v.k = this.clampK(Math.min(w / bw, h / bh) * (1 - 2 * margin));
    v.x = w / 2 - (b.x0 + bw / 2) * v.k;
    v.y = h / 2 - (b.y0 + bh / 2) * v.k;
    this.requestDraw();
  }

  clampK(k) {
    if (!this.box) return k;
    const { w, h } = this.size();
    const fitK = Math.min(w / (this.box.x1 - this.box.x0), h / (this.box.y1 - this.box.y0));
    return Math.min(Math.max(k, fitK * 0.5), MAX_RADIUS / (this.minRadius || 1));
  }

  fit() {
    this.moved = false;
    if (this.box) this.frame(this.box, 0.02);
  }

  // zoom scales the view by f around (cx, cy) in CSS pixels of the canvas
  // (its centre when not given).
  zoom(f, cx, cy) {
    const { w, h } = this.size();
    if (cx === undefined) { cx = w / 2; cy = h / 2; }
    const v = this.view, k = this.clampK(v.k * f);
    f = k / v.k;
    v.x = cx - (cx - v.x) * f; v.y = cy - (cy - v.y) * f; v.k = k;
    this.moved = true;
    this.requestDraw();
  }

  panBy(dx, dy) {
    this.view.x += dx; this.view.y += dy;
    this.moved = true;
    this.requestDraw();
  }

  // showSection frames one section and moves the keyboard focus to its
  // first seat (before load, it is remembered for when the seats arrive).
  showSection(id, speak = true) {
    const s = this.byId.get(id);
    if (!this.seats) { this.wanted = id; return; }
    if (!s || !s.count) return;
    this.frame(s.box, 0.06);
    this.moved = true;
    if (this.focus < s.start || this.focus >= s.start + s.count) this.focus = s.start;
    if (speak) this.announce(t('{name}: {n} of {count} seats available.', { name: s.name || t('Section'), n: this.available(s), count: s.count }) + ' ' + this.label(this.focus));
  }

  available(s) {
    let n = 0;
    for (let i = s.start; i < s.start + s.count; i++) if (this.status[i] === 0) n++;
    return n;
  }

  // refresh refetches every section's bitmap.
  refresh() {
    if (!this.seats) return Promise.resolve();
    return Promise.all(this.sections.map(s => this.refetch(s)));
  }

  // refetch fetches a section's bitmap, once more if asked again meanwhile:
  // never two at a time, never a change missed.
  refetch(s) {
    if (s.inflight) { s.again = true; return s.inflight; }
    s.inflight = (async () => {
      do {
        s.again = false;
        try { await this.applyBitmap(s, performance.now()); } catch { /* the next invalidation or reset retries */ }
      } while (s.again);
    })().finally(() => { s.inflight = null; });
    return s.inflight;
  }

  async applyBitmap(s, started) {
    const res = await fetch(this.base(s) + '/seats.bin');
    if (!res.ok) return;
    const n = +res.headers.get('X-Seat-Count');
    const bytes = new Uint8Array(await res.arrayBuffer());
    if (n !== s.count || bytes.length < (n + 3) >> 2) return; // another layout: a reload shows it
    decode(bytes, n, this.status, s.start);
    const lost = [];
    for (const id of this.selected) {
      const i = this.index.get(id);
      if (this.status[i] !== 0) { this.selected.delete(id); lost.push(this.seats[i]); }
    }
    if (lost.length) {
      this.announce(lost.map(seat => t('Row {row}, seat {n} was just taken', { row: seat.row, n: seat.number })).join('. '));
      this.changed();
    }
    // The invalidations this fetch answers: those that arrived before it began.
    const answered = s.pending.filter(t => t <= started);
    s.pending = s.pending.filter(t => t > started);
    for (const t of answered) this.repaintWanted.push({ section: s.id, from: t, fetch: performance.now() - started });
    this.version++;
    this.canvas.dataset.version = String(this.version);
    this.requestDraw();
  }

  // connect follows every section's invalidations, SOCKET_SECTIONS
  // sections a socket; a reset or an invalidate refetches that section's
  // bitmap, a dropped socket reconnects (and is reset).
  connect() {
    if (!this.seats) return;
    const ids = this.sections.filter(s => s.count).map(s => s.id);
    for (let k = 0; k < ids.length; k += SOCKET_SECTIONS) this.openSocket(ids.slice(k, k + SOCKET_SECTIONS));
  }

  openSocket(ids) {
    if (this.closed || this.suspended) return;
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(`${proto}//${location.host}/v1/events/${encodeURIComponent(this.eventID)}/live`);
    this.sockets.add(ws);
    ws.onopen = () => { for (const id of ids) ws.send(JSON.stringify({ subscribe: id })); };
    ws.onmessage = ev => {
      const arrived = performance.now();
      let m; try { m = JSON.parse(ev.data); } catch { return; }
      if (m.type === 'push_off') { ws.pollMs = m.poll_ms || 2000; return; }
      if (m.type !== 'reset' && m.type !== 'invalidate') return;
      const targets = m.section_id ? [this.byId.get(m.section_id)] : ids.map(id => this.byId.get(id));
      for (const s of targets) {
        if (!s) continue;
        if (m.type === 'invalidate') s.pending.push(arrived); else s.live = true; // a reset: the subscription is live
        this.refetch(s);
      }
    };
    ws.onclose = () => {
      this.sockets.delete(ws);
      for (const id of ids) this.byId.get(id).live = false;
      if (this.closed || this.suspended) return;
      if (!ws.pollMs) { setTimeout(() => this.openSocket(ids), 2000); return; }
      // The operator turned live push off: refresh these sections by
      // polling at the pace the server asked for, and try the stream again
      // in half a minute.
      const poll = setInterval(() => {
        if (this.closed || this.suspended) return clearInterval(poll);
        for (const id of ids) this.refetch(this.byId.get(id));
      }, ws.pollMs);
      setTimeout(() => { clearInterval(poll); this.openSocket(ids); }, 30000);
    };
  }

  // close stops following the live socket; the map still draws and refresh
  // still fetches.
  close() {
    this.closed = true;
    removeEventListener('pagehide', this.onPageHide);
    removeEventListener('pageshow', this.onPageShow);
    this.dropSockets();
  }

  dropSockets() {
    for (const ws of this.sockets) ws.close();
    this.sockets.clear();
  }

  stateOf(i) {
    if (this.selected.has(this.seats[i].id)) return 'selected';
    return STATUS[this.status[i]];
  }

  requestDraw() {
    if (this.frameID) return;
    this.frameID = requestAnimationFrame(() => { this.frameID = 0; this.paint(); });
  }

  // draw is requestDraw: every change waits for the next frame.
  draw() { this.requestDraw(); }

  // sprite is every state's seat as device pixels at a radius (CSS px): a
  // disc with its mark, or below LOD_RADIUS a plain square; cached by size.
  sprite(r, dpr) {
    const lod = r < LOD_RADIUS;
    const q = Math.round(r * dpr * 4) / 4; // a quarter device pixel: a zoom reuses sprites
    const key = (lod ? 'q' : 'c') + q + '@' + dpr;
    let sp = this.sprites.get(key);
    if (sp) return sp;
    if (this.sprites.size > 48) this.sprites.clear();
    if (lod) {
      const d = Math.max(1, Math.round(2 * q));
      sp = { d, px: this.states().map(st => new Uint32Array(d * d).fill(packed(COLOURS[st] || PRICES[Number(st.slice(5))]))) };
    } else {
      // One scratch canvas for every sprite: a zoom makes new ones each frame.
      const d = Math.ceil(2 * q + 2);
      if (!this.scratch || this.scratch.width < d) {
        this.scratch = document.createElement('canvas');
        this.scratch.width = this.scratch.height = Math.max(d, 64);
      }
      const g = this.scratch.getContext('2d', { willReadFrequently: true });
      sp = { d, px: this.states().map(st => {
        g.setTransform(1, 0, 0, 1, 0, 0);
        g.clearRect(0, 0, d, d);
        g.setTransform(dpr, 0, 0, dpr, 0, 0);
        drawSeat(g, d / dpr / 2, d / dpr / 2, q / dpr, st);
        return new Uint32Array(g.getImageData(0, 0, d, d).data.buffer);
      }) };
    }
    this.sprites.set(key, sp);
    return sp;
  }

  // paint draws a frame: every visible seat's sprite copied into one pixel
  // buffer, put on the canvas at once (seats never overlap, so no blending
  // is needed), then the section names and the keyboard focus on top.
  paint() {
    const t0 = performance.now();
    const c = this.canvas, dpr = window.devicePixelRatio || 1, { w, h } = this.size();
    const W = Math.max(1, Math.round(w * dpr)), H = Math.max(1, Math.round(h * dpr));
    if (c.width !== W || c.height !== H) { c.width = W; c.height = H; }
    const ctx = c.getContext('2d'), v = this.view;
    if (!this.seats) { ctx.clearRect(0, 0, W, H); return; }
    if (!this.image || this.image.width !== W || this.image.height !== H) {
      this.image = ctx.createImageData(W, H);
      this.buf = new Uint32Array(this.image.data.buffer);
    }
    const buf = this.buf, xs = this.xs, ys = this.ys, status = this.status, tier = this.tier;
    buf.fill(0);
    this.sprites = this.sprites || new Map();
    const sel = this.selected.size ? this.selected : null;
    const labels = [], rowLabels = [];
    const k = v.k * dpr, ox = v.x * dpr, oy = v.y * dpr;
    for (const s of this.sections) {
      if (!s.count) continue;
      const b = s.box, bx0 = b.x0 * v.k + v.x, by0 = b.y0 * v.k + v.y, bx1 = b.x1 * v.k + v.x, by1 = b.y1 * v.k + v.y;
      if (bx1 < 0 || by1 < 0 || bx0 > w || by0 > h) continue;
      const r = s.radius * v.k, sp = this.sprite(r, dpr), d = sp.d, half = d / 2, px = sp.px;
      for (let i = s.start, end = s.start + s.count; i < end; i++) {
        const X = Math.round(xs[i] * k + ox - half), Y = Math.round(ys[i] * k + oy - half);
        if (X + d <= 0 || Y + d <= 0 || X >= W || Y >= H) continue;
        const img = px[sel && sel.has(this.seats[i].id) ? SELECTED : status[i] === 0 && tier ? STATES.length + tier[i] : status[i]];
        const x0 = Math.max(0, -X), x1 = Math.min(d, W - X), y0 = Math.max(0, -Y), y1 = Math.min(d, H - Y);
        for (let y = y0; y < y1; y++) {
          const src = y * d, dst = (Y + y) * W + X;
          for (let x = x0; x < x1; x++) { const p = img[src + x]; if (p) buf[dst + x] = p; }
        }
      }
      if (r < LOD_RADIUS && s.name && bx1 - bx0 > 56) labels.push([s.name, (bx0 + bx1) / 2, (by0 + by1) / 2]);
      if (r >= LOD_RADIUS) {
        // Zoomed in: each row's label beside its first seat, as on the
        // venue's signs; a row whose start is off the canvas keeps its
        // label at the canvas's left edge while its seats are in view.
        for (let i = s.start, end = s.start + s.count; i < end; i++) {
          if (i > s.start && this.seats[i].row === this.seats[i - 1].row) continue;
          const row = this.rows[this.seats[i].r], last = row[row.length - 1];
          let x = xs[i] * v.k + v.x - r * 2.4;
          const y = ys[i] * v.k + v.y, xr = xs[last] * v.k + v.x;
          if (y < -10 || y > h + 10 || x > w + 20 || xr < 0) continue;
          const pinned = x < 24;
          if (pinned) x = 24;
          rowLabels.push([this.seats[i].row, x, y, pinned]);
        }
      }
    }
    ctx.putImageData(this.image, 0, 0);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    if (labels.length) {
      // Section names on the overview, where single seats are too small to read.
      ctx.font = '600 12px system-ui, sans-serif';
      ctx.textAlign = 'center'; ctx.textBaseline = 'middle';
      ctx.lineJoin = 'round'; ctx.lineWidth = 3; ctx.strokeStyle = 'rgba(255,255,255,.9)'; ctx.fillStyle = '#1b1b1f';
      for (const [text, x, y] of labels) { ctx.strokeText(text, x, y); ctx.fillText(text, x, y); }
    }
    if (rowLabels.length) {
      ctx.font = '600 11px system-ui, sans-serif';
      ctx.textAlign = 'right'; ctx.textBaseline = 'middle'; ctx.fillStyle = '#1b1b1f';
      for (const [text, x, y, pinned] of rowLabels) {
        if (pinned) {
          const tw = ctx.measureText(text).width;
          ctx.fillStyle = 'rgba(255,255,255,.92)'; ctx.fillRect(x - tw - 4, y - 8, tw + 7, 16); ctx.fillStyle = '#1b1b1f';
        }
        ctx.fillText(text, x, y);
      }
    }
    c.dataset.rowLabels = String(rowLabels.length);
    this.overlays();
    if (this.focus >= 0 && document.activeElement === c) {
      const s = this.sections[this.sec[this.focus]];
      const r = Math.max(s.radius * v.k + 3, 7);
      ctx.strokeStyle = '#163f7a'; ctx.lineWidth = 3; // the page's focus ring
      ctx.beginPath(); ctx.arc(xs[this.focus] * v.k + v.x, ys[this.focus] * v.k + v.y, r, 0, TAU); ctx.stroke();
    }
    const end = performance.now();
    this.drawTimes.push(end - t0);
    if (this.drawTimes.length > KEEP) this.drawTimes.shift();
    if (this.repaintWanted.length) {
      for (const want of this.repaintWanted.splice(0)) {
        performance.measure('seatmap:invalidate-to-paint', { start: want.from, end, detail: { section: want.section } });
        this.repaints.push({ section: want.section, ms: end - want.from, fetch: want.fetch, at: performance.timeOrigin + end });
      }
      if (this.repaints.length > KEEP) this.repaints.splice(0, this.repaints.length - KEEP);
      this.repainted = (this.repainted || 0) + 1;
      c.dataset.repainted = String(this.repainted);
    }
  }

  // stateById is a seat's status: available, held, sold or blocked ('' for
  // a seat the map does not have). The fan's own selection is `selected`.
  stateById(id) {
    const i = this.index && this.index.get(id);
    return i === undefined ? '' : STATUS[this.status[i]];
  }

  label(i) {
    const seat = this.seats[i], s = this.sections[this.sec[i]];
    const where = this.sections.length > 1 && s.name ? s.name + ', ' : '';
    return where + t('Row {row}, seat {n}, {state}', { row: seat.row, n: seat.number, state: t(this.stateOf(i)) }) + (seat.price ? ', ' + money(seat.price) : '');
  }

  // setFocus moves the keyboard focus to seat i, keeps it in view and says it.
  setFocus(i) {
    if (!this.seats || i < 0 || i >= this.seats.length) return;
    this.focus = i;
    const { w, h } = this.size(), v = this.view, m = 24;
    const x = this.xs[i] * v.k + v.x, y = this.ys[i] * v.k + v.y;
    if (x < m || y < m || x > w - m || y > h - m) { v.x += w / 2 - x; v.y += h / 2 - y; }
    this.announce(this.label(i));
    this.requestDraw();
  }

  changed() {
    this.onChange([...this.selected].map(id => this.seats[this.index.get(id)]));
  }

  toggle(i) {
    const seat = this.seats[i];
    if (this.selected.has(seat.id)) this.selected.delete(seat.id);
    else if (this.status[i] !== 0) { this.announce(t('Row {row}, seat {n} is {state} and cannot be selected', { row: seat.row, n: seat.number, state: t(STATUS[this.status[i]]) })); return; }
    else if (this.selected.size >= this.max) { this.announce(t('You can select at most {n} seats', { n: this.max })); return; }
    else this.selected.add(seat.id);
    this.announce(this.label(i));
    this.requestDraw();
    this.changed();
  }

  // move handles a navigation key: left and right along the row, up and
  // down to the nearest seat of the next row (across sections), Home and
  // End to the row's ends, Page Up and Page Down to another section.
  move(key) {
    if (this.focus < 0) return this.setFocus(0);
    const seat = this.seats[this.focus], row = this.rows[seat.r];
    switch (key) {
      case 'ArrowLeft': case 'ArrowRight': {
        const c = seat.c + (key === 'ArrowRight' ? 1 : -1);
        if (c >= 0 && c < row.length) this.setFocus(row[c]);
        return;
      }
      case 'Home': return this.setFocus(row[0]);
      case 'End': return this.setFocus(row[row.length - 1]);
      case 'PageUp': case 'PageDown': {
        const step = key === 'PageDown' ? 1 : -1;
        for (let k = this.sec[this.focus] + step; k >= 0 && k < this.sections.length; k += step) {
          const s = this.sections[k];
          if (s.count) { this.focus = s.start; this.showSection(s.id); return; }
        }
        return;
      }
    }
    const r = seat.r + (key === 'ArrowDown' ? 1 : -1);
    if (r < 0 || r >= this.rows.length) return;
    const x = this.xs[this.focus];
    let best = -1, bd = Infinity;
    for (const j of this.rows[r]) { const d = Math.abs(this.xs[j] - x); if (d < bd) { bd = d; best = j; } }
    this.setFocus(best);
  }

  // hit is the seat under a point of the canvas (CSS px), -1 for none; a
  // finger gets a larger target than a mouse.
  hit(px, py, slop = 0) {
    const v = this.view, x = (px - v.x) / v.k, y = (py - v.y) / v.k;
    let best = -1, bd = Infinity;
    for (const s of this.sections) {
      if (!s.count) continue;
      const reach = Math.max(s.radius * 1.15, slop / v.k);
      const b = s.box;
      if (x < b.x0 - reach || y < b.y0 - reach || x > b.x1 + reach || y > b.y1 + reach) continue;
      for (let i = s.start, end = s.start + s.count; i < end; i++) {
        const d = (this.xs[i] - x) ** 2 + (this.ys[i] - y) ** 2;
        if (d < reach * reach && d < bd) { bd = d; best = i; }
      }
    }
    return best;
  }

  // seatRadiusAt is the radius in CSS px of the seats near a point (the
  // largest section radius when nothing is near).
  seatRadiusAt(px, py) {
    const v = this.view, x = (px - v.x) / v.k, y = (py - v.y) / v.k;
    for (const s of this.sections) if (s.count && x >= s.box.x0 && x <= s.box.x1 && y >= s.box.y0 && y <= s.box.y1) return s.radius * v.k;
    return this.maxRadius * v.k;
  }

  // pitchAt is the distance in CSS px between neighbouring seats near a
  // point: a finger's target there.
  pitchAt(px, py) { return this.seatRadiusAt(px, py) / 0.42; }

  // tap picks the seat under the pointer, or zooms in there when seats are
  // too small to aim at.
  // A finger needs seats at least TOUCH_TARGET px apart: closer, a tap
  // zooms in there until they are.
  tap(px, py, touch) {
    if (!this.seats) return;
    const r = this.seatRadiusAt(px, py);
    if (r < PICK_RADIUS) { this.zoom(Math.max(3, touch ? TOUCH_TARGET * 1.15 * 0.42 / r : 0), px, py); return; }
    if (touch && this.pitchAt(px, py) < TOUCH_TARGET) {
      this.zoom(Math.max(1.5, TOUCH_TARGET * 1.15 / this.pitchAt(px, py)), px, py);
      this.announce(t('Zoomed in. Tap a seat to choose it.'));
      return;
    }
    const i = this.hit(px, py, touch ? 12 : 0);
    if (i >= 0) { this.focus = i; this.toggle(i); }
  }

  bind() {
    const c = this.canvas;
    c.addEventListener('keydown', e => {
      if (!this.seats) return;
      if (e.key.startsWith('Arrow') || e.key === 'Home' || e.key === 'End' || e.key === 'PageUp' || e.key === 'PageDown') { e.preventDefault(); this.move(e.key); }
      else if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); if (this.focus < 0) this.setFocus(0); else this.toggle(this.focus); }
      else if (e.key === '+' || e.key === '=') { e.preventDefault(); this.zoomToFocus(1.5); }
      else if (e.key === '-') { e.preventDefault(); this.zoomToFocus(1 / 1.5); }
      else if (e.key === '0') { e.preventDefault(); this.fit(); }
    });
    c.addEventListener('focus', () => {
      if (this.seats && this.focus < 0 && !this.pointing) this.setFocus(0); else this.requestDraw();
    });
    c.addEventListener('blur', () => this.requestDraw());
    c.addEventListener('wheel', e => {
      e.preventDefault();
      const r = c.getBoundingClientRect(), unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? r.height : 1;
      const f = Math.min(2, Math.max(0.5, Math.exp(-e.deltaY * unit * 0.002)));
      this.zoom(f, e.clientX - r.left, e.clientY - r.top);
    }, { passive: false });

    // Pointers: one drags the map, two pinch it (zoom around their middle
    // and pan with it); a press that did not move is a tap.
    const down = new Map();
    let gesture = null;
    const local = e => { const r = c.getBoundingClientRect(); return [e.clientX - r.left, e.clientY - r.top]; };
    const pair = () => {
      const [a, b] = [...down.values()];
      return { d: Math.hypot(a.x - b.x, a.y - b.y) || 1, x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 };
    };
    c.addEventListener('pointerdown', e => {
      if (e.button > 0) return;
      this.pointing = true;
      try { c.setPointerCapture(e.pointerId); } catch { /* a synthetic pointer cannot be captured */ }
      const [x, y] = local(e);
      down.set(e.pointerId, { x, y });
      this.tip.hidden = true;
      if (gesture) clearTimeout(gesture.timer);
      if (down.size === 1) {
        gesture = { x0: x, y0: y, moved: false, touch: e.pointerType === 'touch' };
        // A finger resting on a seat shows its details (a phone's hover).
        if (gesture.touch) {
          const g = gesture;
          g.timer = setTimeout(() => { if (gesture === g && !g.moved && down.size === 1) { g.long = this.hover(x, y, 12, true); } }, LONG_PRESS);
        }
      } else if (gesture) { gesture.moved = true; gesture.pinch = pair(); }
    });
    c.addEventListener('pointermove', e => {
      const p = down.get(e.pointerId);
      if (!p && e.pointerType === 'mouse') { const [x, y] = local(e); this.hover(x, y); }
      if (!p || !gesture) return;
      const [x, y] = local(e);
      if (down.size === 1) {
        if (!gesture.moved && Math.hypot(x - gesture.x0, y - gesture.y0) > (gesture.touch ? 8 : 4)) { gesture.moved = true; clearTimeout(gesture.timer); c.classList.add('dragging'); }
        if (gesture.moved) this.panBy(x - p.x, y - p.y);
        p.x = x; p.y = y;
        return;
      }
      p.x = x; p.y = y;
      const now = pair(), was = gesture.pinch || now;
      this.panBy(now.x - was.x, now.y - was.y);
      this.zoom(now.d / was.d, now.x, now.y);
      gesture.pinch = now;
    });
    const up = e => {
      if (!down.has(e.pointerId)) return;
      down.delete(e.pointerId);
      if (down.size === 1 && gesture) gesture.pinch = null;
      if (down.size) return;
      c.classList.remove('dragging');
      if (gesture) clearTimeout(gesture.timer);
      if (gesture && !gesture.moved && !gesture.long && e.type === 'pointerup') { const [x, y] = local(e); this.tap(x, y, gesture.touch); }
      gesture = null;
      setTimeout(() => { this.pointing = false; });
    };
    c.addEventListener('pointerup', up);
    c.addEventListener('pointercancel', up);
    c.addEventListener('pointerleave', e => { if (e.pointerType === 'mouse') this.tip.hidden = true; });
    // A phone's long press shows the seat, not the browser's menu.
    c.addEventListener('contextmenu', e => { if (gesture && gesture.touch) e.preventDefault(); });
    new ResizeObserver(() => { if (this.seats && !this.moved) this.fit(); else this.requestDraw(); }).observe(c);
  }

  // hover shows the details of the seat under a resting mouse beside it,
  // or above a finger's long press (and says them), nothing while seats are
  // too small to aim at. It says whether it showed a seat.
  hover(px, py, slop = 0, touch = false) {
    const i = this.seats && this.seatRadiusAt(px, py) >= LOD_RADIUS ? this.hit(px, py, slop) : -1;
    if (i < 0) { this.tip.hidden = true; return false; }
    this.tip.textContent = this.label(i);
    this.tip.dataset.seat = this.seats[i].id;
    const { w, h } = this.size();
    this.tip.hidden = false;
    this.tip.style.left = Math.max(0, Math.min(px + (touch ? -this.tip.offsetWidth / 2 : 14), w - this.tip.offsetWidth)) + 'px';
    const below = py + 14, above = py - this.tip.offsetHeight - (touch ? 36 : 14);
    this.tip.style.top = (touch || below + this.tip.offsetHeight > h ? Math.max(0, above) : below) + 'px';
    if (touch) this.announce(this.label(i));
    return true;
  }

  // zoomToFocus zooms around the focused seat (the centre without one).
  zoomToFocus(f) {
    if (this.focus < 0) return this.zoom(f);
    const v = this.view;
    this.zoom(f, this.xs[this.focus] * v.k + v.x, this.ys[this.focus] * v.k + v.y);
  }
}

// money formats an amount in minor units: the currency's own number of
// decimals (none for JPY, three for KWD, two for EUR) says how many minor
// units make one.
export function money(m) {
  if (!m || typeof m.amount !== 'number') return '';
  try {
    const f = new Intl.NumberFormat(locale(), { style: 'currency', currency: m.currency });
    return f.format(m.amount / 10 ** f.resolvedOptions().maximumFractionDigits);
  } catch { return (m.amount / 100).toFixed(2) + ' ' + m.currency; }
}

export { token };
