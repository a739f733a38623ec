// The contextfold inspector's script (host/src/cli/inspector/page.js), inlined in the page by the
// binary. Served (`mode: "live"`) it reads the server's /api routes one page of events at a
// time; written by --out (`mode: "file"`) it reads the same shapes from the embedded data,
// parsing a session's events only when that session is first shown. No library, no network.
'use strict';

/** Boot data the binary wrote into the page. */
const boot = JSON.parse(document.getElementById('cf-boot').textContent);
/** Whether a server answers (else the embedded data does, read-only). */
const live = boot.mode === 'live';
/** Events per timeline page. */
const PAGE = boot.defaultPage || 200;
/** Events per page of a summary's source column. */
const SOURCE_PAGE = 50;
/** The views, in tab order. */
const VIEWS = ['sessions', 'timeline', 'checkpoints', 'usage', 'summaries'];

/** What the page shows now. */
const state = { session: null, overview: null, events: [], after: 0, row: -1, pick: null, sourceAfter: 0, sourceEnd: 0 };
/** Parsed embedded event blocks, by session (file mode). */
const embedded = new Map();

/** The first element matching `selector` under `root`. */
const $ = (selector, root = document) => root.querySelector(selector);
/** An element with attributes and children (strings become text, never markup). */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === 'text') node.textContent = value; else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) if (child !== null && child !== undefined) node.append(child);
  return node;
}
/** Shows a message in the live region (`error` styles it as a failure). */
function status(message, error = false) {
  const node = $('#status');
  node.textContent = message;
  node.classList.toggle('error', error);
}
/** A count as the page prints it (`90,000`; `–` when absent). */
const fmt = (n) => (n === null || n === undefined ? '–' : Number(n).toLocaleString('en-US'));

/** The embedded timeline rows of `session`, parsed on first use. */
function embeddedEvents(session) {
  if (!embedded.has(session)) {
    const index = boot.eventBlocks.indexOf(session);
    const node = document.getElementById('cf-events-' + index);
    embedded.set(session, node ? JSON.parse(node.textContent) : []);
  }
  return embedded.get(session);
}

/** One of the server's JSON routes, or the same answer from the embedded data. */
async function api(path, params = {}) {
  if (live) {
    const response = await fetch(path + '?' + new URLSearchParams(params), { cache: 'no-store' });
    const body = await response.json();
    if (!response.ok) throw new Error(`${body.error.code}: ${body.error.message}`);
    return body;
  }
  if (path === '/api/sessions') return boot.sessions;
  const overview = boot.overviews[params.session];
  if (!overview) throw new Error(`unknown_session: no session \`${params.session}\` in this file`);
  if (path === '/api/overview') return overview;
  const rows = embeddedEvents(params.session);
  const after = Number(params.after || 0);
  let lo = 0, hi = rows.length;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (rows[mid].seq <= after) lo = mid + 1; else hi = mid; }
  return { session: params.session, after, events: rows.slice(lo, lo + Number(params.limit || PAGE)), lastSeq: overview.lastSeq };
}

/** Rows of an events table (turn starts marked; events a current checkpoint covers marked). */
function eventRows(tbody, events, coveredThrough) {
  tbody.replaceChildren();
  let turn = null;
  events.forEach((event, index) => {
    const starts = event.turnId !== turn;
    turn = event.turnId;
    const classes = [starts ? 'turn-start' : '', event.seq <= coveredThrough ? 'covered' : ''].filter(Boolean).join(' ');
    tbody.append(el('tr', { class: classes || null, 'data-seq': event.seq, 'data-index': index },
      el('td', { class: 'num', text: event.seq }),
      el('td', { text: starts ? event.turnId ?? '' : '' }),
      el('td', { text: event.kind }),
      el('td', { class: 'num', text: fmt(event.tokens) }),
      el('td', { class: 'preview', text: event.preview })));
  });
}

/** Seq through which the current checkpoint folds the log (0 without one). */
function currentThrough() {
  const current = state.overview?.checkpoints.current;
  const detail = state.overview?.details.find((d) => d.checkpointId === current);
  return detail ? detail.highWaterSeq : 0;
}

/** Loads the timeline page after `after` and shows it. */
async function loadPage(after) {
  const lastSeq = state.overview ? state.overview.lastSeq : Infinity;
  after = Math.max(0, Math.min(after, Math.max(0, lastSeq - 1)));
  const page = await api('/api/events', { session: state.session, after, limit: PAGE });
  state.events = page.events;
  state.after = after;
  eventRows($('#timeline-table tbody'), page.events, currentThrough());
  const first = page.events[0]?.seq, last = page.events.at(-1)?.seq;
  const tokens = page.events.reduce((sum, e) => sum + (e.tokens || 0), 0);
  $('#timeline-range').textContent = page.events.length
    ? `events ${fmt(first)}–${fmt(last)} of ${fmt(page.lastSeq)} (seq); ${fmt(tokens)} tokens on this page`
    : 'no events';
  selectRow(Math.min(Math.max(state.row, 0), page.events.length - 1), false);
}

/** Pages the timeline: `first`, `prev`, `next`, `last`. */
function turnPage(which) {
  const first = state.events[0]?.seq ?? 1;
  const last = state.events.at(-1)?.seq ?? 0;
  const end = state.overview?.lastSeq ?? last;
  const target = { first: 0, prev: Math.max(0, first - 1 - PAGE), next: last < end ? last : state.after, last: Math.max(0, end - PAGE) }[which];
  return loadPage(target).catch((error) => status(String(error.message || error), true));
}

/** Marks row `index` of the timeline as selected (and scrolls it into view). */
function selectRow(index, scroll = true) {
  state.row = index;
  for (const tr of $('#timeline-table tbody').children) {
    tr.setAttribute('aria-selected', String(Number(tr.dataset.index) === index));
  }
  const row = $(`#timeline-table tbody tr[data-index="${index}"]`);
  if (row && scroll) row.scrollIntoView({ block: 'nearest' });
}

/** The timeline's keys: arrows move the selection, PageUp/PageDown page, Home/End jump. */
function timelineKeys(event) {
  const keys = { PageDown: 'next', PageUp: 'prev', Home: 'first', End: 'last' };
  if (keys[event.key]) {
    event.preventDefault();
    turnPage(keys[event.key]);
  } else if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
    event.preventDefault();
    const step = event.key === 'ArrowDown' ? 1 : -1;
    const next = state.row + step;
    if (next >= state.events.length) { state.row = 0; turnPage('next'); }
    else if (next < 0) { state.row = PAGE - 1; turnPage('prev'); }
    else selectRow(next);
  }
}

/** The sessions view. */
function renderSessions(list) {
  const tbody = $('#sessions-table tbody');
  tbody.replaceChildren(...list.sessions.map((row) => el('tr', { 'data-session': row.session },
    el('td', {}, el('button', { type: 'button', class: 'open-session', 'aria-current': row.session === state.session ? 'true' : null, text: row.session })),
    el('td', { class: 'num', text: fmt(row.events) }))));
  for (const button of tbody.querySelectorAll('button.open-session')) {
    button.addEventListener('click', () => openSession(button.textContent, 'timeline'));
  }
}

/** The checkpoints view: one card per recorded checkpoint, as `checkpoints --json` lists them. */
function renderCheckpoints() {
  const o = state.overview;
  const v = o.verify;
  $('#verify-line').textContent = v.ok
    ? `verify: ok, ${v.verified} checkpoint(s) match the ${fmt(v.events)} canonical events; projection at ${v.projection.checkpointId ?? 'none'}`
    : `verify: FAILED (${v.failures.join(', ')}); ${v.verified} checkpoint(s) verified`;
  $('#verify-line').className = v.ok ? 'badge-line ok' : 'badge-line bad';
  const list = $('#checkpoint-list');
  list.replaceChildren();
  if (!o.checkpoints.checkpoints.length) list.append(el('p', { class: 'empty', text: 'no checkpoints recorded' }));
  for (const cp of o.checkpoints.checkpoints) {
    const check = v.checkpoints.find((c) => c.eventId === cp.eventId) || {};
    const detail = o.details.find((d) => d.eventId === cp.eventId) || {};
    const through = detail.highWaterSeq ?? cp.eventCount ?? 0;
    const from = detail.foldedFromSeq ?? 1;
    const pct = (seq) => (o.lastSeq ? (100 * seq) / o.lastSeq : 0);
    const card = el('article', {
      class: ['cp', cp.current ? 'is-current' : '', cp.retracted ? 'is-retracted' : ''].filter(Boolean).join(' '),
      'data-checkpoint-id': cp.checkpointId ?? cp.eventId, 'data-event-count': cp.eventCount ?? '',
      'data-verified': check.ok ? 'ok' : check.code ?? 'unknown', 'data-current': String(!!cp.current),
      'data-retracted': cp.retracted ? 'true' : 'false', 'aria-label': `checkpoint ${cp.checkpointId}`,
    },
    el('div', { class: 'cp-head' },
      el('span', { class: 'cp-id', text: cp.checkpointId ?? cp.eventId }),
      cp.current ? el('span', { class: 'badge current', text: 'current' }) : null,
      cp.retracted ? el('span', { class: 'badge retracted', text: `retracted: ${cp.retracted}` }) : null,
      el('span', { class: check.ok ? 'badge ok' : 'badge bad', text: check.ok ? 'verified' : `verify: ${check.code ?? 'unknown'}` }),
      el('span', { class: 'facts', text: cp.error ? `unreadable: ${cp.error.code}` : `v${cp.schemaVersion} · ${fmt(cp.eventCount)} events / ${fmt(cp.turnCount)} turns · ${fmt(cp.estimatedTokens)} tokens · by ${cp.producedBy ?? '-'}` })),
    el('div', { class: 'bar', role: 'img', 'aria-label': `covers seq 1 to ${through} of ${o.lastSeq}; folds ${from} to ${through}` },
      el('span', { class: 'covered', style: `width:${pct(through)}%` }),
      el('span', { class: 'folded', style: `left:${pct(from - 1)}%;width:${pct(through - from + 1)}%` })),
    el('div', { class: 'facts' },
      `covers seq 1–${fmt(through)} of ${fmt(o.lastSeq)}; folds ${fmt(from)}–${fmt(through)} · after `,
      cp.previousCheckpointId ? el('a', { href: '#', class: 'lineage', 'data-target': cp.previousCheckpointId, text: cp.previousCheckpointId }) : '– (first of its chain)'));
    const actions = el('div', { class: 'actions' },
      el('button', { type: 'button', class: 'show-events', text: 'Show folded events' }),
      el('button', { type: 'button', class: 'show-summary', text: 'Summary and quality' }));
    if (live && !cp.retracted && cp.checkpointId) actions.append(el('button', { type: 'button', class: 'retract', text: 'Retract…' }));
    card.append(actions);
    $('.show-events', card).addEventListener('click', () => { show('timeline'); loadPage(from - 1); });
    $('.show-summary', card).addEventListener('click', () => { show('summaries'); pickSummary(cp.eventId); });
    $('.retract', card)?.addEventListener('click', () => retractForm(card, cp.checkpointId));
    $('.lineage', card)?.addEventListener('click', (event) => {
      event.preventDefault();
      list.querySelector(`[data-checkpoint-id="${CSS.escape(cp.previousCheckpointId)}"] button`)?.focus();
    });
    list.append(card);
  }
}

/** The inline form of a retraction: a reason, then POST /api/retract and a reload. */
function retractForm(card, checkpointId) {
  if ($('form.retract', card)) { $('form.retract input', card).focus(); return; }
  const input = el('input', { type: 'text', required: true, 'aria-label': `Why retract ${checkpointId}`, placeholder: 'reason (recorded with the retraction)' });
  const form = el('form', { class: 'retract' }, input,
    el('button', { type: 'submit', text: 'Confirm retraction' }),
    el('button', { type: 'button', class: 'cancel', text: 'Cancel' }));
  $('.cancel', form).addEventListener('click', () => { form.remove(); $('.retract', card)?.focus(); });
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const response = await fetch('/api/retract', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-contextfold-token': boot.token },
      body: JSON.stringify({ session: state.session, checkpointId, reason: input.value }),
    });
    const body = await response.json();
    if (!response.ok) { status(`retract failed: ${body.error.code}: ${body.error.message}`, true); return; }
    await openSession(state.session, 'checkpoints');
    status(`retracted ${checkpointId}; current: ${body.current ?? 'none (the raw source)'}`);
    $('#checkpoint-list [data-current="true"] button, #checkpoint-list button')?.focus();
  });
  card.append(form);
  input.focus();
}

/** The usage view: the plot (inline SVG) and its table. */
function renderUsage() {
  const { requests, outcomes } = state.overview.usage;
  const tbody = $('#usage-table tbody');
  const reported = (r) => (r.kind === 'response' ? r.inputTokens : r.countedTokens ?? null);
  tbody.replaceChildren(...requests.map((r) => el('tr', { 'data-index': r.index },
    el('td', { class: 'num', text: r.index }), el('td', { text: `${r.provider}/${r.model}` }), el('td', { text: r.kind }),
    el('td', { class: 'num', text: fmt(r.estimatedInputTokens) }), el('td', { class: 'num', text: fmt(reported(r)) }),
    el('td', { class: 'num', text: fmt(r.cachedInputTokens ?? 0) }),
    el('td', { class: 'num', text: r.kind === 'response' && r.inputTokens ? `${Math.round((100 * (r.cachedInputTokens || 0)) / r.inputTokens)}%` : '–' }))));
  const box = $('#usage-plot');
  box.replaceChildren();
  if (!requests.length) { box.append(el('p', { class: 'empty', text: 'no model requests recorded for this session' })); return; }
  const W = 960, H = 320, L = 60, R = 10, T = 10, B = 30;
  const windows = requests.map((r) => r.limitTokens).filter(Number.isFinite);
  const budgets = outcomes.map((o) => o.tokens?.budget).filter(Number.isFinite);
  const top = Math.max(1, ...requests.map((r) => Math.max(r.estimatedInputTokens, reported(r) || 0)), ...windows, ...budgets, ...outcomes.map((o) => o.tokens?.before || 0));
  const x = (i) => L + ((W - L - R) * (i - 0.5)) / requests.length;
  const y = (v) => T + (H - T - B) * (1 - v / top);
  const NS = 'http://www.w3.org/2000/svg';
  const svg = (tag, attrs, text) => { const n = document.createElementNS(NS, tag); for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v); if (text) n.textContent = text; return n; };
  const plot = svg('svg', { viewBox: `0 0 ${W} ${H}`, width: '100%', role: 'img', id: 'usage-svg', 'aria-label': `${requests.length} model requests: estimated and reported input tokens, cached input, compactions and budget` });
  for (let k = 0; k <= 4; k++) {
    const v = (top * k) / 4;
    plot.append(svg('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: '#e3e7ee' }), svg('text', { x: L - 6, y: y(v) + 4, 'text-anchor': 'end' }, fmt(Math.round(v))));
  }
  const bw = Math.max(1, ((W - L - R) / requests.length) * 0.6);
  for (const r of requests) {
    if (r.cachedInputTokens) plot.append(svg('rect', { class: 'cached', x: x(r.index) - bw / 2, y: y(r.cachedInputTokens), width: bw, height: y(0) - y(r.cachedInputTokens), fill: '#2f9e44', opacity: '0.55' }));
  }
  for (const o of outcomes) {
    const at = L + ((W - L - R) * o.afterRequests) / requests.length;
    const line = svg('line', { class: 'outcome', x1: at, x2: at, y1: y(o.tokens?.before || 0), y2: y(o.tokens?.after || 0), stroke: '#868e96', 'stroke-width': 3 });
    line.append(svg('title', {}, `${o.trigger} ${o.outcome}: ${o.tokens?.before} → ${o.tokens?.after} tokens (budget ${o.tokens?.budget})`));
    plot.append(line);
    if (Number.isFinite(o.tokens?.budget)) plot.append(svg('line', { class: 'budget', x1: at - 4, x2: at + 4, y1: y(o.tokens.budget), y2: y(o.tokens.budget), stroke: '#b42318', 'stroke-width': 2 }));
  }
  for (const w of new Set(windows)) plot.append(svg('line', { class: 'window', x1: L, x2: W - R, y1: y(w), y2: y(w), stroke: '#b42318', 'stroke-dasharray': '6 4' }), svg('text', { x: W - R, y: y(w) - 4, 'text-anchor': 'end' }, `window ${fmt(w)}`));
  const line = (values, color, cls, dash) => plot.append(svg('polyline', { class: cls, fill: 'none', stroke: color, 'stroke-width': 1.5, 'stroke-dasharray': dash || '', points: values.map(([i, v]) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ') }));
  line(requests.map((r) => [r.index, r.estimatedInputTokens]), '#1a5fd0', 'estimated', '4 2');
  line(requests.filter((r) => reported(r) !== null).map((r) => [r.index, reported(r)]), '#d9480f', 'reported');
  plot.append(svg('text', { x: (W + L) / 2, y: H - 6, 'text-anchor': 'middle' }, 'model request (in record order)'));
  box.append(plot);
}

/** The summaries view's checkpoint buttons. */
function renderSummaryPick() {
  const pick = $('#summary-pick');
  pick.replaceChildren(...state.overview.details.map((d) => {
    const button = el('button', { type: 'button', 'data-event-id': d.eventId, 'aria-pressed': String(d.eventId === state.pick), text: d.checkpointId });
    button.addEventListener('click', () => pickSummary(d.eventId));
    return button;
  }));
  if (!state.overview.details.length) pick.append(el('p', { class: 'empty', text: 'no checkpoints recorded' }));
}

/** Shows checkpoint `eventId`'s summary, quality record and folded source events. */
async function pickSummary(eventId) {
  const detail = state.overview.details.find((d) => d.eventId === eventId) ?? state.overview.details.at(-1);
  if (!detail) return;
  state.pick = detail.eventId;
  renderSummaryPick();
  const q = detail.quality;
  const classes = ['constraint', 'plan', 'error', 'command', 'path', 'identifier', 'overall'];
  const pctOf = (s) => (s.total ? `${s.kept}/${s.total} (${Math.floor((100 * s.kept) / s.total)}%)` : '–');
  $('#summary-side').replaceChildren(...[
    el('h3', { text: `${detail.checkpointId} (${detail.trigger}) folds seq ${fmt(detail.foldedFromSeq)}–${fmt(detail.highWaterSeq)}` }),
    el('p', { class: 'facts', text: `summarizer: ${detail.summarizer ?? 'not recorded'}` }),
    q ? el('table', { class: 'quality' },
      el('thead', {}, el('tr', {}, el('th', { text: 'Class' }), el('th', { class: 'num', text: 'before' }), el('th', { class: 'num', text: 'after' }))),
      el('tbody', {}, classes.map((c) => el('tr', { 'data-class': c }, el('td', { text: c }), el('td', { class: 'num', text: pctOf(q.before[c]) }), el('td', { class: 'num', text: pctOf(q.after[c]) })))))
      : el('p', { class: 'empty', text: 'no quality record in this checkpoint\'s manifest' }),
    q ? el('p', { class: 'facts', text: `gate v${q.gateVersion}, threshold ${q.thresholdPercent}%; covered ${pctOf(q.covered)}; chain best ${q.chainBestPercent}%; appended ${q.appended}; repair ${q.repairRequested ? 'requested' : 'not requested'}${q.recompacted ? '; recompacted the chain' : ''}` }) : null,
    q && q.lost.length ? el('div', {}, el('h4', { text: `Lost artifacts (${q.lost.length})` }), el('ul', { class: 'lost' }, q.lost.map((l) => el('li', { text: l })))) : null,
    el('div', { class: 'summary', tabindex: '0', 'aria-label': 'summary text', text: detail.summary ?? '(provider-native state: no text summary)' }),
  ].filter(Boolean));
  state.sourceEnd = detail.highWaterSeq;
  await loadSource(detail.foldedFromSeq - 1);
}

/** Loads the summary's source events after `after` (never past its coverage). */
async function loadSource(after) {
  const detail = state.overview.details.find((d) => d.eventId === state.pick);
  after = Math.max(detail.foldedFromSeq - 1, Math.min(after, state.sourceEnd - 1));
  const page = await api('/api/events', { session: state.session, after, limit: SOURCE_PAGE });
  // Another pick or page may have been asked for while this one was on its way: show only the latest.
  if (state.pick !== detail.eventId) return;
  const events = page.events.filter((e) => e.seq <= state.sourceEnd);
  state.sourceAfter = after;
  eventRows($('#source-table tbody'), events, 0);
  $('#source-table').dataset.sourceOf = detail.eventId;
  $('#source-range').textContent = events.length ? `folded events ${fmt(events[0].seq)}–${fmt(events.at(-1).seq)} of ${fmt(detail.foldedFromSeq)}–${fmt(state.sourceEnd)}` : 'no events';
}

/** Shows `view` (and selects its tab). */
function show(view) {
  for (const name of VIEWS) {
    $(`#view-${name}`).hidden = name !== view;
    const tab = $(`#tab-${name}`);
    tab.setAttribute('aria-selected', String(name === view));
    tab.tabIndex = name === view ? 0 : -1;
  }
  if (location.hash !== '#' + view) history.replaceState(null, '', '#' + view);
  document.body.dataset.view = view;
}

/** Opens `session`: its overview and first timeline page, then `view`. */
async function openSession(session, view) {
  state.session = session;
  state.row = -1;
  for (const node of document.querySelectorAll('.session-name')) node.textContent = session;
  const [overview] = await Promise.all([api('/api/overview', { session }), state.overview?.session === session ? null : loadPage(0)]);
  state.overview = overview;
  $('#meta').textContent = `${session} · ${fmt(overview.eventCount)} events · ${overview.checkpoints.checkpoints.length} checkpoint(s)${live ? '' : ' · read-only file'}`;
  renderCheckpoints();
  renderUsage();
  renderSummaryPick();
  if (state.pick && !overview.details.some((d) => d.eventId === state.pick)) state.pick = null;
  if (overview.details.length) await pickSummary(state.pick ?? overview.details.at(-1).eventId);
  eventRows($('#timeline-table tbody'), state.events, currentThrough());
  selectRow(Math.max(state.row, 0), false);
  if (view) show(view);
  const list = await api('/api/sessions');
  renderSessions(list);
  document.body.dataset.ready = '1';
}

/** Wires the controls and opens the first session. */
async function start() {
  for (const tab of document.querySelectorAll('nav [role="tab"]')) {
    tab.addEventListener('click', () => show(tab.dataset.view));
    tab.addEventListener('keydown', (event) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
      if (!step) return;
      const next = VIEWS[(VIEWS.indexOf(tab.dataset.view) + step + VIEWS.length) % VIEWS.length];
      show(next);
      $(`#tab-${next}`).focus();
    });
  }
  for (const button of document.querySelectorAll('#timeline-toolbar button')) button.addEventListener('click', () => turnPage(button.dataset.page));
  for (const button of document.querySelectorAll('#source-toolbar button')) {
    button.addEventListener('click', () => loadSource(button.dataset.page === 'next' ? state.sourceAfter + SOURCE_PAGE : state.sourceAfter - SOURCE_PAGE));
  }
  $('#goto-seq').addEventListener('change', (event) => loadPage(Number(event.target.value) - 1));
  $('#timeline-grid').addEventListener('keydown', timelineKeys);
  const wanted = VIEWS.includes(location.hash.slice(1)) ? location.hash.slice(1) : 'timeline';
  show(wanted);
  try {
    const asked = new URLSearchParams(location.search).get('session');
    const session = asked ?? boot.session ?? (await api('/api/sessions')).sessions[0]?.session;
    if (!session) { status('this database has no sessions'); show('sessions'); document.body.dataset.ready = '1'; return; }
    await openSession(session, wanted);
  } catch (error) {
    status(String(error.message || error), true);
  }
}

start();
