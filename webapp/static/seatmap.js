// The seat map: seats drawn on a canvas at the layout's x, y; statuses from
// the 2-bit bitmap (seats.bin), refetched when the live socket invalidates
// the section. Keyboard: arrows move between seats, Enter or Space toggles.
import { token } from './api.js';

export const STATUS = ['available', 'held', 'sold', 'blocked'];
const COLOURS = { available: '#1e7a3a', held: '#b36b00', sold: '#6b6b75', blocked: '#2b2b30', selected: '#1f5fbf' };

// decode reads n 2-bit statuses, four a byte, most significant pair first.
export function decode(bytes, n) {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (bytes[i >> 2] >> (6 - 2 * (i & 3))) & 3;
  return out;
}

// drawSeat draws one seat: colour and a pattern per state, so state never
// depends on colour alone.
export function drawSeat(ctx, x, y, r, state) {
  ctx.fillStyle = COLOURS[state];
  ctx.beginPath();
  ctx.arc(x, y, r, 0, 6.2832);
  ctx.fill();
  if (r < 2.5) return;
  ctx.strokeStyle = '#fff';
  ctx.lineWidth = Math.max(1, r / 4);
  ctx.beginPath();
  const d = r * 0.55;
  if (state === 'held') { ctx.moveTo(x - d, y + d); ctx.lineTo(x + d, y - d); }
  else if (state === 'sold') { ctx.moveTo(x - d, y - d); ctx.lineTo(x + d, y + d); ctx.moveTo(x + d, y - d); ctx.lineTo(x - d, y + d); }
  else if (state === 'blocked') { ctx.moveTo(x - d, y); ctx.lineTo(x + d, y); }
  else if (state === 'selected') { ctx.moveTo(x - d, y); ctx.lineTo(x - d / 3, y + d * 0.7); ctx.lineTo(x + d, y - d * 0.6); }
  ctx.stroke();
}

export class SeatMap {
  // el is the container; onChange gets the selected seats after each toggle.
  constructor(el, eventID, sectionID, { announce, onChange, max = 6 }) {
    Object.assign(this, { el, eventID, sectionID, announce, onChange, max });
    this.selected = new Set();
    this.focus = -1;
    this.view = { k: 1, x: 0, y: 0 };
    this.canvas = document.createElement('canvas');
    this.canvas.tabIndex = 0;
    this.canvas.setAttribute('role', 'application');
    this.canvas.setAttribute('aria-roledescription', 'seat map');
    this.canvas.setAttribute('aria-label', 'Seat map. Use the arrow keys to move between seats and Enter or Space to select a seat.');
    el.append(this.canvas);
    el.seatmap = this; // for tests and assistive scripts: the container knows its map
    this.bind();
  }

  async load() {
    const base = `/v1/events/${encodeURIComponent(this.eventID)}/sections/${encodeURIComponent(this.sectionID)}`;
    this.base = base;
    const res = await fetch(base + '/seats');
    if (!res.ok) throw new Error('seat map unavailable');
    const snap = await res.json();
    this.seats = snap.seats;
    this.index = new Map(this.seats.map((s, i) => [s.id, i]));
    this.status = new Uint8Array(this.seats.length);
    this.seats.forEach((s, i) => { this.status[i] = Math.max(0, STATUS.indexOf(s.status)); });
    // Rows in layout order, for the arrow keys.
    this.rows = [];
    const rowOf = new Map();
    this.seats.forEach((s, i) => {
      if (!rowOf.has(s.row)) { rowOf.set(s.row, this.rows.length); this.rows.push([]); }
      s.r = rowOf.get(s.row); s.c = this.rows[s.r].length; this.rows[s.r].push(i);
    });
    this.bounds();
    this.fit();
    await this.refresh();
    this.connect();
  }

  bounds() {
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (const s of this.seats) { x0 = Math.min(x0, s.x); y0 = Math.min(y0, s.y); x1 = Math.max(x1, s.x); y1 = Math.max(y1, s.y); }
    // The seat radius is half the smallest spacing between neighbours in a row.
    let gap = Infinity;
    for (const row of this.rows) for (let j = 1; j < row.length; j++) {
      const a = this.seats[row[j - 1]], b = this.seats[row[j]];
      const d = Math.hypot(a.x - b.x, a.y - b.y); if (d > 0) gap = Math.min(gap, d);
    }
    this.box = { x0, y0, w: Math.max(1, x1 - x0), h: Math.max(1, y1 - y0) };
    this.radius = isFinite(gap) ? gap * 0.42 : 1;
  }

  fit() {
    const r = this.canvas.getBoundingClientRect();
    const pad = this.radius * 2;
    this.view.k = Math.min(r.width / (this.box.w + 2 * pad), r.height / (this.box.h + 2 * pad)) || 1;
    this.view.x = (r.width - this.box.w * this.view.k) / 2 - this.box.x0 * this.view.k;
    this.view.y = (r.height - this.box.h * this.view.k) / 2 - this.box.y0 * this.view.k;
    this.draw();
  }

  zoom(f, cx, cy) {
    const r = this.canvas.getBoundingClientRect();
    if (cx === undefined) { cx = r.width / 2; cy = r.height / 2; }
    const v = this.view;
    v.x = cx - (cx - v.x) * f; v.y = cy - (cy - v.y) * f; v.k *= f;
    this.draw();
  }

  async refresh() {
    const res = await fetch(this.base + '/seats.bin');
    if (!res.ok) return;
    const n = +res.headers.get('X-Seat-Count') || this.seats.length;
    const st = decode(new Uint8Array(await res.arrayBuffer()), n);
    if (st.length === this.status.length) this.status = st;
    for (const id of [...this.selected]) if (this.status[this.index.get(id)] !== 0) this.selected.delete(id);
    this.draw();
    this.canvas.dataset.version = String((+this.canvas.dataset.version || 0) + 1);
  }

  // connect follows the section's invalidations; a reset or an invalidate
  // refetches the bitmap (debounced), a drop reconnects.
  connect() {
    if (this.closed) return;
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(`${proto}//${location.host}/v1/events/${encodeURIComponent(this.eventID)}/live`);
    this.ws = ws;
    ws.onopen = () => ws.send(JSON.stringify({ subscribe: this.sectionID }));
    ws.onmessage = ev => {
      let m; try { m = JSON.parse(ev.data); } catch { return; }
      if (m.type === 'reset' || (m.type === 'invalidate' && (!m.section_id || m.section_id === this.sectionID))) {
        clearTimeout(this.pending);
        this.pending = setTimeout(() => this.refresh(), 50);
      }
    };
    ws.onclose = () => { if (!this.closed) setTimeout(() => this.connect(), 2000); };
  }

  close() { this.closed = true; if (this.ws) this.ws.close(); }

  stateOf(i) {
    if (this.selected.has(this.seats[i].id)) return 'selected';
    return STATUS[this.status[i]];
  }

  draw() {
    const c = this.canvas, dpr = window.devicePixelRatio || 1, r = c.getBoundingClientRect();
    if (c.width !== Math.round(r.width * dpr) || c.height !== Math.round(r.height * dpr)) {
      c.width = Math.round(r.width * dpr); c.height = Math.round(r.height * dpr);
    }
    const ctx = c.getContext('2d'), v = this.view;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, r.width, r.height);
    if (!this.seats) return;
    const rad = this.radius * v.k;
    for (let i = 0; i < this.seats.length; i++) {
      const s = this.seats[i], x = s.x * v.k + v.x, y = s.y * v.k + v.y;
      if (x < -rad || y < -rad || x > r.width + rad || y > r.height + rad) continue;
      drawSeat(ctx, x, y, rad, this.stateOf(i));
    }
    if (this.focus >= 0 && document.activeElement === c) {
      const s = this.seats[this.focus];
      ctx.strokeStyle = '#f2b100'; ctx.lineWidth = 3;
      ctx.beginPath(); ctx.arc(s.x * v.k + v.x, s.y * v.k + v.y, rad + 4, 0, 6.2832); ctx.stroke();
    }
  }

  stateById(id) { const i = this.index && this.index.get(id); return i === undefined ? '' : this.stateOf(i); }

  label(i) {
    const s = this.seats[i], st = this.stateOf(i);
    return `Row ${s.row}, seat ${s.number}, ${st}${s.price ? ', ' + money(s.price) : ''}`;
  }

  setFocus(i) {
    if (i < 0 || i >= this.seats.length) return;
    this.focus = i;
    this.canvas.setAttribute('aria-activedescendant', '');
    this.announce(this.label(i));
    this.draw();
  }

  toggle(i) {
    const s = this.seats[i];
    if (this.selected.has(s.id)) this.selected.delete(s.id);
    else if (this.status[i] !== 0) { this.announce(`Row ${s.row}, seat ${s.number} is ${STATUS[this.status[i]]} and cannot be selected`); return; }
    else if (this.selected.size >= this.max) { this.announce(`You can select at most ${this.max} seats`); return; }
    else this.selected.add(s.id);
    this.announce(this.label(i));
    this.draw();
    this.onChange([...this.selected].map(id => this.seats[this.index.get(id)]));
  }

  move(key) {
    if (this.focus < 0) return this.setFocus(0);
    const s = this.seats[this.focus];
    if (key === 'ArrowLeft' || key === 'ArrowRight') {
      const row = this.rows[s.r], c = s.c + (key === 'ArrowRight' ? 1 : -1);
      if (c >= 0 && c < row.length) this.setFocus(row[c]);
      return;
    }
    const r = s.r + (key === 'ArrowDown' ? 1 : -1);
    if (r < 0 || r >= this.rows.length) return;
    let best = -1, bd = Infinity;
    for (const j of this.rows[r]) { const d = Math.abs(this.seats[j].x - s.x); if (d < bd) { bd = d; best = j; } }
    this.setFocus(best);
  }

  hit(px, py) {
    const v = this.view, x = (px - v.x) / v.k, y = (py - v.y) / v.k;
    let best = -1, bd = this.radius * this.radius * 2;
    for (let i = 0; i < this.seats.length; i++) {
      const s = this.seats[i], d = (s.x - x) ** 2 + (s.y - y) ** 2;
      if (d < bd) { bd = d; best = i; }
    }
    return best;
  }

  bind() {
    const c = this.canvas;
    c.addEventListener('keydown', e => {
      if (!this.seats) return;
      if (e.key.startsWith('Arrow')) { e.preventDefault(); this.move(e.key); }
      else if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); if (this.focus < 0) this.setFocus(0); else this.toggle(this.focus); }
      else if (e.key === '+' || e.key === '=') this.zoom(1.25);
      else if (e.key === '-') this.zoom(0.8);
    });
    c.addEventListener('focus', () => { if (this.seats && this.focus < 0) this.setFocus(0); else this.draw(); });
    c.addEventListener('blur', () => this.draw());
    c.addEventListener('wheel', e => { e.preventDefault(); const r = c.getBoundingClientRect(); this.zoom(e.deltaY < 0 ? 1.15 : 1 / 1.15, e.clientX - r.left, e.clientY - r.top); }, { passive: false });
    let drag = null;
    c.addEventListener('pointerdown', e => { drag = { x: e.clientX, y: e.clientY, moved: false }; c.setPointerCapture(e.pointerId); });
    c.addEventListener('pointermove', e => {
      if (!drag) return;
      const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 4) drag.moved = true;
      if (drag.moved) { this.view.x += dx; this.view.y += dy; drag.x = e.clientX; drag.y = e.clientY; this.draw(); }
    });
    c.addEventListener('pointerup', e => {
      if (drag && !drag.moved && this.seats) {
        const r = c.getBoundingClientRect(), i = this.hit(e.clientX - r.left, e.clientY - r.top);
        if (i >= 0) { this.focus = i; this.toggle(i); }
      }
      drag = null;
    });
    new ResizeObserver(() => this.draw()).observe(c);
  }
}

export function money(m) {
  if (!m || typeof m.amount !== 'number') return '';
  try { return new Intl.NumberFormat(undefined, { style: 'currency', currency: m.currency }).format(m.amount / 100); }
  catch { return (m.amount / 100).toFixed(2) + ' ' + m.currency; }
}

export { token };
