// The apps' languages: English (the default) and Dutch, the demo venue's.
// A message is looked up by its English text, so a string missing from a
// catalogue reads in English rather than as a key; {name} in a message is
// filled from vars. The language is the fan's choice (the header's switch,
// kept in localStorage), else the browser's first language we have, else
// English. Dates and money go through the browser's Intl in locale().
import { NL } from './i18n-nl.js';
import { STAFF_NL } from './i18n-nl-staff.js';

// The staff apps' Dutch (i18n-nl-staff.js) under the fan app's: a message
// both catalogues hold reads as the fan app's.
const CATALOGUES = { en: {}, nl: { ...STAFF_NL, ...NL } };
export const LANGS = { en: 'English', nl: 'Nederlands' };

function pick() {
  try {
    const kept = localStorage.getItem('lang');
    if (kept && CATALOGUES[kept]) return kept;
  } catch { /* storage off: the browser's languages */ }
  for (const l of navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || 'en']) {
    const base = String(l).toLowerCase().split('-')[0];
    if (CATALOGUES[base]) return base;
  }
  return 'en';
}

let current = pick();

// lang is the language shown: 'en' or 'nl'.
export const lang = () => current;

// locale is the Intl locale of the language shown: the browser's own when
// it is a variant of it (en-US keeps its 12-hour clock), else the
// language's usual one.
export function locale() {
  const own = navigator.language || '';
  if (own.toLowerCase().split('-')[0] === current) return own;
  return current === 'nl' ? 'nl-NL' : 'en-GB';
}

// t is a message in the language shown.
export function t(text, vars) {
  const s = (CATALOGUES[current] && CATALOGUES[current][text]) || text;
  return vars ? s.replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m)) : s;
}

// plural picks the singular or plural message for n ({n} filled in).
export const plural = (n, one, many, vars = {}) => t(n === 1 ? one : many, { n, ...vars });

// setLang shows the app in l from now on (and remembers the choice).
export function setLang(l) {
  if (!CATALOGUES[l]) return;
  current = l;
  try { localStorage.setItem('lang', l); } catch { /* not kept */ }
  translatePage();
}

// translatePage puts the page's fixed texts (elements with data-i18n, in
// English in the HTML) and its lang attribute in the language shown.
export function translatePage(root = document) {
  document.documentElement.lang = current;
  for (const el of root.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
  for (const el of root.querySelectorAll('[data-i18n-label]')) el.setAttribute('aria-label', t(el.dataset.i18nLabel));
}

// langSwitch is the header's switch: a button naming the other language
// in that language; pressing it shows the app in it and calls onChange.
export function langSwitch(onChange) {
  const b = document.createElement('button');
  b.type = 'button'; b.id = 'langswitch'; b.className = 'secondary lang';
  const render = () => {
    const other = current === 'en' ? 'nl' : 'en';
    b.textContent = LANGS[other];
    b.lang = other;
    b.dataset.lang = other;
  };
  render();
  b.addEventListener('click', () => { setLang(b.dataset.lang); render(); onChange(); });
  return b;
}
