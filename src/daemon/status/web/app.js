// The dssync status page: plain browser JavaScript, no build step, no framework. It reads
// /status and /history once, then follows /events (Server-Sent Events). Every text from the
// daemon (file names included) goes through textContent, never innerHTML.
'use strict';

const MAX_ROWS = 300;
const state = { status: undefined, activity: [], problems: [], points: [], csrf: '', actions: false, lastSeen: 0, charts: {}, es: undefined };
const $ = (id) => document.getElementById(id);

/** A DOM element: h('td', { class: 'path' }, 'a.txt'). */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) if (c !== undefined && c !== null && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

// ---- formatting ----------------------------------------------------------------------

const pad = (n) => String(n).padStart(2, '0');
function clock(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '-' : `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
function duration(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${pad(Math.floor((s % 3600) / 60))}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}
function when(iso) {
  if (!iso) return '-';
  const diff = Date.parse(iso) - Date.now();
  const rel = Math.abs(diff) < 1000 ? 'now' : diff < 0 ? `${duration(-diff)} ago` : `in ${duration(diff)}`;
  return `${clock(iso)} (${rel})`;
}
function ms(n) {
  if (n === undefined || n === null) return '';
  return n < 1000 ? `${Math.round(n)} ms` : `${(n / 1000).toFixed(1)} s`;
}
const num = (n) => (n === undefined || n === null ? '-' : Number(n).toLocaleString('en-US'));

// ---- data ----------------------------------------------------------------------------

async function getJson(path) {
  const r = await fetch(path, { headers: { accept: 'application/json' }, credentials: 'same-origin', cache: 'no-store' });
  if (r.status === 401) {
    showLogin(true);
    throw new Error('sign in needed');
  }
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return r.json();
}

/** The state the page arrived with (signed in): drawn at once, no round trip (issue 25.9). */
function firstState() {
  const el = $('first-state');
  if (!el) return undefined;
  el.remove(); // a reload after an interruption asks the daemon again
  try {
    return JSON.parse(el.textContent);
  } catch {
    return undefined;
  }
}

async function load() {
  const first = firstState();
  const [session, status, history] = first ? [first.session, first.status, first.history] : await Promise.all([getJson('session'), getJson('status'), getJson('history')]);
  showLogin(false);
  state.csrf = session.csrf;
  state.actions = session.actions;
  state.status = status;
  if (history) {
    state.activity = history.activity.map((e) => ({ seq: e.seq, ...e.item }));
    state.problems = history.problems;
    state.points = history.points;
    state.lastSeen = state.activity[0] ? state.activity[0].seq : 0;
  }
  renderAll();
  follow();
  loadCoverage();
}

/** Follows /events; reconnects by itself (EventSource) and by hand when the stream was closed. */
function follow() {
  if (state.es) state.es.close();
  const es = new EventSource('events');
  state.es = es;
  es.addEventListener('hello', () => {
    setConn('live');
    // Back after an interruption: the lists may have missed problems, reload them.
    if (document.body.classList.contains('stale')) getJson('history').then((hist) => {
      if (!hist) return;
      state.activity = hist.activity.map((e) => ({ seq: e.seq, ...e.item }));
      state.problems = hist.problems;
      state.points = hist.points;
      renderAll();
    }, () => undefined);
    document.body.classList.remove('stale');
  });
  es.addEventListener('status', (e) => {
    state.status = JSON.parse(e.data);
    renderMappings();
    renderProblems();
    renderPassHistory();
    renderHeader();
  });
  es.addEventListener('activity', (e) => {
    const item = JSON.parse(e.data);
    const seq = Number(e.lastEventId);
    if (seq && seq <= state.lastSeen) return;
    state.lastSeen = seq || state.lastSeen;
    state.activity.unshift({ seq, ...item });
    if (state.activity.length > 1000) state.activity.length = 1000;
    renderActivity(seq);
  });
  es.addEventListener('problem', (e) => {
    state.problems.unshift(JSON.parse(e.data));
    if (state.problems.length > 300) state.problems.length = 300;
    renderProblems();
  });
  es.addEventListener('chart', (e) => {
    for (const p of JSON.parse(e.data)) {
      const i = state.points.findIndex((q) => q.t === p.t);
      if (i >= 0) state.points[i] = p;
      else state.points.push(p);
    }
    const cutoff = Date.now() / 1000 - 3600;
    state.points = state.points.filter((p) => p.t >= cutoff);
    renderCharts();
  });
  es.addEventListener('reset', () => load().catch(() => undefined));
  es.onerror = () => {
    setConn(es.readyState === EventSource.CLOSED ? 'gone' : 'reconnecting');
    document.body.classList.add('stale');
    if (es.readyState === EventSource.CLOSED) setTimeout(() => follow(), 3000);
  };
}

let lostSince;
function setConn(s) {
  const el = $('conn');
  const banner = $('gone');
  if (s === 'live') {
    lostSince = undefined;
    el.dataset.state = 'live';
    $('conn-text').textContent = 'live';
    banner.hidden = true;
    return;
  }
  lostSince = lostSince || new Date();
  el.dataset.state = 'gone';
  $('conn-text').textContent = 'daemon not answering';
  banner.hidden = false;
  banner.textContent = `The daemon is not answering since ${clock(lostSince.toISOString())}: it stopped, or this machine cannot reach it. What is shown is as of then; trying again every 2 s.`;
}

// ---- actions -------------------------------------------------------------------------

const ACTION_DONE = {
  rescan: () => 'full pass requested',
  retry: (b) => `retry requested${b.refusalsForgotten ? ` (${b.refusalsForgotten} refused file(s) retried)` : ''}`,
  pause: (b) => b.note || 'paused',
  resume: (b) => b.note || 'resumed',
  'confirm-delete': (b) => `${b.deletes} deletion(s) confirmed: the next pass deletes them`,
};

async function act(kind, mapping, button, extra = {}) {
  button.disabled = true;
  const note = button.parentElement.querySelector('.act-note');
  try {
    const r = await fetch(`actions/${kind}`, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', 'x-dssync-csrf': state.csrf },
      body: JSON.stringify({ mapping, ...extra }),
    });
    const body = await r.json().catch(() => ({}));
    note.textContent = r.ok ? ACTION_DONE[kind](body) : body.error || `HTTP ${r.status}`;
    note.className = `act-note ${r.ok ? 'muted' : 'bad-text'}`;
  } catch (e) {
    note.textContent = String(e.message || e);
    note.className = 'act-note bad-text';
  } finally {
    setTimeout(() => (button.disabled = false), 1500);
  }
}

// ---- rendering -----------------------------------------------------------------------

function tone(m) {
  if (m.pendingDeletes) return ['bad', 'mass delete: waiting for you'];
  if (m.phase === 'degraded' || m.degraded.length) return ['bad', 'degraded'];
  if (m.paused && !m.currentPass) return ['warn', 'paused'];
  if (m.phase === 'standby') return ['warn', 'standby'];
  if (m.phase === 'starting') return ['busy', 'starting'];
  if (m.currentPass) return ['busy', m.currentPass.kind === 'full' && !m.lastFullPassOkAt ? 'first pass' : m.currentPass.kind === 'full' ? 'full pass' : 'syncing changes'];
  if (m.phase === 'syncing') return ['busy', 'syncing'];
  if (m.phase === 'stopped') return ['warn', 'stopped'];
  if ((m.lastPass && !m.lastPass.ok) || problemCount(m) > 0) return ['warn', m.watchMode === 'poll' ? 'polling · attention' : 'watching · attention'];
  return ['ok', m.watchMode === 'poll' || m.watchMode === 'polling' ? 'polling' : 'watching'];
}

/** Files not mirrored, kept until fixed (an older daemon sends only the last pass's skipped list). */
function problemCount(m) {
  return m.problems ? (m.problemsTotal ?? m.problems.length) : 0;
}

/** The mapping's lease: held here, or which process holds it (a standby writes nothing). */
function leaseLine(l) {
  if (l.state === 'held') return `held by this process${l.since ? ` since ${when(l.since)}` : ''}`;
  if (l.state === 'standby' && l.holder) return `standby · held by ${l.holder.host} (session ${l.holder.session})${l.holder.since ? ` since ${when(l.holder.since)}` : ''} · nothing is written here until it is released or expires`;
  if (l.state === 'at-risk') return 'not renewed in time · writes stopped until it is claimed again';
  return l.state;
}

function passLine(p) {
  const counts = ['uploaded', 'replaced', 'renamed', 'updated', 'deleted', 'adopted', 'forgotten', 'skipped', 'failed'].filter((k) => p[k]).map((k) => `${p[k]} ${k}`);
  return `${p.kind}, ${p.ok ? 'ok' : 'not ok'}, ${when(p.finishedAt)}${counts.length ? ` · ${counts.join(', ')}` : ''}${p.unchanged ? ` · ${num(p.unchanged)} unchanged` : ''}`;
}

function currentPass(m) {
  const p = m.currentPass;
  if (!p) return 'none';
  const elapsed = Date.now() - Date.parse(p.startedAt);
  const rate = elapsed > 1000 ? p.done / (elapsed / 1000) : 0;
  const total = p.done + (m.pending || 0);
  const parts = [`${p.kind === 'full' ? 'full pass' : 'changes'} since ${clock(p.startedAt)}`, `${num(p.done)} done`];
  if (rate > 0) parts.push(`${rate.toFixed(1)}/s`);
  if (rate > 0 && m.pending) parts.push(`ETA ${duration((m.pending / rate) * 1000)}`);
  const frag = [parts.join(' · ')];
  if (m.pending && total > 0) frag.push(h('div', { class: 'progress', title: `${p.done} of ~${total}` }, h('span', {})));
  return frag;
}

function mappingCard(m) {
  const [t, label] = tone(m);
  const ds = m.dataSourceName ? [m.dataSourceName, ' ', h('span', { class: 'muted mono' }, m.dataSourceId || '(created on first pass)')] : [h('span', { class: 'mono' }, m.dataSourceId || '-')];
  const rows = [
    ['folder', h('span', { class: 'mono' }, m.path)],
    ['data source', ds],
    ['watch mode', m.watchMode ? String(m.watchMode) : `inotify · ${num(m.watchedDirs)} folders`],
    ['files tracked', num(m.filesTracked)],
    ['pending', num(m.pending)],
    ...(m.paused ? [['paused', `since ${when(m.paused.since)} · no request for this mapping; changes are noted and sent on resume`]] : []),
    ...(m.lease ? [['lease', leaseLine(m.lease)]] : []),
    ['current pass', currentPass(m)],
    ['last pass', m.lastPass ? passLine(m.lastPass) : 'none yet'],
    // Named apart from "last pass": a failed full pass after a good one shows both, plainly.
    ['last good full pass', when(m.lastFullPassOkAt)],
    ['next rescan', when(m.nextRescanAt)],
  ];
  const card = h('article', { class: 'card', 'data-tone': t, 'data-mapping': m.id },
    h('div', { class: 'card-head' }, h('h3', {}, m.id), h('span', { class: `badge ${t === 'ok' ? '' : t}` }, label)),
    h('dl', { class: 'kv' }, rows.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
    m.degraded.length ? h('ul', { class: 'reasons' }, m.degraded.map((r) => h('li', {}, r))) : undefined,
    m.pendingDeletes ? pendingDeletes(m) : undefined,
  );
  const bar = card.querySelector('.progress > span');
  if (bar) bar.style.width = `${Math.min(100, (100 * m.currentPass.done) / (m.currentPass.done + m.pending))}%`;
  if (state.actions) {
    const rescan = h('button', { type: 'button', 'data-action': 'rescan' }, 'Rescan now');
    const retry = h('button', { type: 'button', 'data-action': 'retry' }, 'Retry skipped and failed files');
    const pause = h('button', { type: 'button', 'data-action': m.paused ? 'resume' : 'pause' }, m.paused ? 'Resume' : 'Pause');
    rescan.addEventListener('click', () => act('rescan', m.id, rescan));
    retry.addEventListener('click', () => act('retry', m.id, retry));
    pause.addEventListener('click', () => act(m.paused ? 'resume' : 'pause', m.id, pause));
    const buttons = [rescan, retry, pause];
    const p = m.pendingDeletes;
    if (p && !p.confirmed) {
      // The digest names the set shown here: if it changed meanwhile, the daemon refuses.
      const confirm = h('button', { type: 'button', 'data-action': 'confirm-delete', class: 'danger' }, `Confirm deleting ${num(p.total)} document(s)`);
      confirm.addEventListener('click', () => act('confirm-delete', m.id, confirm, { digest: p.digest }));
      buttons.push(confirm);
    }
    card.append(h('div', { class: 'actions' }, ...buttons, h('span', { class: 'act-note muted' })));
  }
  return card;
}

/** The deletions a stopped pass would make: the first ones, with the count of the rest. */
function pendingDeletes(m) {
  const p = m.pendingDeletes;
  const more = p.total - p.paths.length;
  return h('div', { class: 'pending-deletes' },
    h('div', { class: 'bad-text' }, p.confirmed ? `${num(p.total)} deletion(s) confirmed: the next pass deletes them` : `${num(p.total)} document(s) would be deleted; waiting for your decision since ${when(p.since)}`),
    h('ul', { class: 'mono' }, p.paths.slice(0, 20).map((x) => h('li', {}, x))),
    p.total > 20 ? h('div', { class: 'muted' }, `… and ${num(p.total - Math.min(20, p.paths.length))} more${more > 0 ? ` (dssync status --mapping ${m.id} --pending-deletes lists the first ${p.paths.length})` : ''}`) : undefined,
    h('div', { class: 'muted' }, 'Putting the files back ends the wait by itself.'),
  );
}

function renderMappings() {
  const s = state.status;
  if (!s) return;
  const box = $('mappings');
  // Keep an action's note while the card is redrawn.
  const notes = new Map([...box.querySelectorAll('.card')].map((c) => [c.dataset.mapping, c.querySelector('.act-note')]));
  box.replaceChildren(...s.mappings.map((m) => {
    const card = mappingCard(m);
    const old = notes.get(m.id);
    const now = card.querySelector('.act-note');
    if (old && now) now.replaceWith(old);
    return card;
  }));
  if (!s.mappings.length) box.append(h('p', { class: 'muted' }, 'No mappings configured.'));
  const sel = $('f-mapping');
  const have = new Set([...sel.options].map((o) => o.value));
  for (const m of s.mappings) if (!have.has(m.id)) sel.append(h('option', { value: m.id }, m.id));
}

function renderHeader() {
  const s = state.status;
  if (!s) return;
  const bad = s.mappings.filter((m) => m.phase === 'degraded' || m.degraded.length);
  const attention = s.mappings.filter((m) => !bad.includes(m) && ((m.lastPass && !m.lastPass.ok) || problemCount(m) > 0));
  const busy = s.mappings.filter((m) => m.currentPass || m.phase === 'syncing' || m.phase === 'starting');
  const el = $('summary');
  // Anything that needs the operator links to the problems (first on a narrow screen).
  if (bad.length || attention.length) el.setAttribute('href', '#problems-panel');
  else el.removeAttribute('href');
  if (bad.length) [el.className, el.textContent] = ['summary bad', `${bad.length} of ${s.mappings.length} mapping(s) degraded: ${bad.map((m) => m.id).join(', ')}`];
  else if (attention.length) {
    const files = attention.reduce((n, m) => n + problemCount(m), 0);
    [el.className, el.textContent] = ['summary warn', `${attention.length} mapping(s) need attention (see problems${files ? `: ${num(files)} file(s) not mirrored` : ''}): ${attention.map((m) => m.id).join(', ')}`];
  }
  else if (busy.length) [el.className, el.textContent] = ['summary', `syncing ${busy.map((m) => m.id).join(', ')}`];
  else [el.className, el.textContent] = ['summary ok', `all ${s.mappings.length} mapping(s) in sync`];
  $('daemon-line').textContent = `${s.version} · pid ${s.pid} · up ${duration(Date.now() - Date.parse(s.startedAt))}`;
  const r = s.requests;
  $('footer').textContent = `service ${s.baseUrl} (organization ${s.organizationId}) · requests ${num(r.total)} total, ${num(r.retries)} retried, ${num(r.throttled)} throttled, ${r.inFlight} in flight, ${r.queued} queued${r.learnedRps ? `, learned rate ${r.learnedRps}/s` : ''}${s.memory ? ` · memory ${s.memory.rssMB} MB` : ''} · config ${s.configFile || '(environment)'} · state ${s.statePath}${s.installation ? ` · installation ${s.installation.id} (${s.installation.origin}${s.installation.formerIds ? `, ${s.installation.formerIds} former` : ''})${s.installation.stateRebuilt ? `, state rebuilt (${s.installation.stateRebuilt.kind})` : ''}` : ''}`;
  document.title = `${bad.length ? '⚠ ' : ''}dssync status`;
}

function renderActivity(freshSeq) {
  const fm = $('f-mapping').value;
  const fk = $('f-kind').value;
  const rows = state.activity.filter((a) => (!fm || a.mapping === fm) && (!fk || a.kind === fk)).slice(0, MAX_ROWS);
  $('activity').tBodies[0].replaceChildren(...rows.map((a) => h('tr', { class: a.seq === freshSeq ? 'fresh' : undefined, 'data-kind': a.kind },
    h('td', { class: 'time', title: a.at }, clock(a.at)),
    h('td', { class: 'opt' }, a.mapping),
    h('td', {}, a.kind),
    h('td', { class: 'path', title: a.message || undefined }, a.path),
    h('td', { class: `r-${a.outcome} result`, title: a.message || undefined }, resultLabel(a)),
    h('td', { class: 'num opt' }, ms(a.lagMs)),
  )));
  $('activity-empty').hidden = rows.length > 0;
}

/** "done", or the outcome with the HTTP status when the message has one (details: tooltip, problems). */
function resultLabel(a) {
  if (a.outcome === 'done') return 'done';
  const code = /\b([45]\d\d)\b/.exec(a.message || '');
  return code ? `${a.outcome} (${code[1]})` : a.outcome;
}

function renderProblems() {
  const s = state.status;
  const box = $('problems');
  const parts = [];
  // What happens next comes with each reason (daemon/mapping/next-step.ts): the page words nothing itself.
  for (const m of s ? s.mappings : []) m.degraded.forEach((r, i) => parts.push(h('div', { class: 'problem' }, h('span', { class: 'what bad-text' }, `${m.id}: degraded`), ' ', r, (m.degradedNext || [])[i] ? h('div', { class: 'next' }, `next: ${m.degradedNext[i]}`) : undefined)));
  // Each error's stable code beside its prose; the filter keeps one code's errors.
  const sel = $('f-code');
  const codes = new Set([...sel.options].map((o) => o.value));
  for (const p of state.problems) {
    if (!p.code || codes.has(p.code)) continue;
    codes.add(p.code);
    sel.append(h('option', { value: p.code }, p.code));
  }
  const fc = sel.value;
  const recent = state.problems.filter((p) => !fc || p.code === fc).slice(0, 50);
  if (recent.length) parts.push(h('h3', { class: 'sub' }, 'Recent errors'));
  for (const p of recent) {
    parts.push(h('div', { class: 'problem', 'data-code': p.code },
      h('span', { class: 'time muted' }, clock(p.at)), ' ', h('span', { class: 'what' }, `${p.mapping} · ${p.what}`), ' ',
      p.code ? h('code', { class: 'code' }, p.code) : undefined, p.code ? ' ' : undefined,
      p.path ? h('span', { class: 'path' }, p.path) : undefined,
      p.message ? h('div', {}, p.message) : undefined,
      h('div', { class: 'next' }, `next: ${p.next}`)));
  }
  // Files not mirrored, kept until each is mirrored or gone (issue 25.1); excluded ones apart.
  const listed = s ? s.mappings.flatMap((m) => (m.problems || []).map((x) => ({ m: m.id, ...x }))) : [];
  const listedTotal = s ? s.mappings.reduce((n, m) => n + problemCount(m), 0) : 0;
  if (listed.length) parts.push(h('h3', { class: 'sub', id: 'not-mirrored' }, `Not mirrored (${num(listedTotal)})`));
  for (const x of listed.slice(0, 50)) parts.push(h('div', { class: 'problem', 'data-kind': x.kind }, h('span', { class: 'what' }, `${x.m} · ${x.kind}`), ' ', h('span', { class: 'path' }, x.path), h('div', { class: 'next' }, `${x.reason} · since ${when(x.since)}`)));
  if (listedTotal > 50) parts.push(h('div', { class: 'muted' }, `… and ${num(listedTotal - 50)} more (dssync status, or /status/problems?mapping=ID&list=problems&offset=N)`));
  const excluded = s ? s.mappings.flatMap((m) => (m.excluded || []).map((x) => ({ m: m.id, ...x }))) : [];
  if (excluded.length) parts.push(h('h3', { class: 'sub' }, `Excluded by a setting (${num(s.mappings.reduce((n, m) => n + (m.excludedTotal ?? (m.excluded || []).length), 0))}, not problems)`));
  for (const x of excluded.slice(0, 20)) parts.push(h('div', { class: 'problem muted' }, h('span', { class: 'what' }, x.m), ' ', h('span', { class: 'path' }, x.path), h('div', { class: 'next' }, x.reason)));
  // An older daemon: the last pass's skipped files and the not-ingested list, as before.
  const skipped = s ? s.mappings.filter((m) => !m.problems).flatMap((m) => m.skipped.map((x) => ({ m: m.id, ...x }))) : [];
  // /status carries the first 100 per mapping; the totals say how many there are (the rest: /status/problems).
  const skippedTotal = s ? s.mappings.filter((m) => !m.problems).reduce((n, m) => n + (m.skippedTotal ?? m.skipped.length), 0) : 0;
  if (skipped.length) parts.push(h('h3', { class: 'sub' }, `Skipped files (${num(skippedTotal)})`));
  for (const x of skipped.slice(0, 50)) parts.push(h('div', { class: 'problem' }, h('span', { class: 'what' }, x.m), ' ', h('span', { class: 'path' }, x.path), h('div', { class: 'next' }, x.reason)));
  if (skippedTotal > 50) parts.push(h('div', { class: 'muted' }, `… and ${num(skippedTotal - 50)} more (dssync status, or /status/problems?mapping=ID&offset=N)`));
  const ni = s ? s.mappings.filter((m) => !m.problems).flatMap((m) => m.notIngested.map((x) => ({ m: m.id, ...x }))) : [];
  if (ni.length) parts.push(h('h3', { class: 'sub' }, `Not ingested by the service (${ni.length})`));
  for (const x of ni.slice(0, 50)) parts.push(h('div', { class: 'problem' }, h('span', { class: 'what' }, x.m), ' ', h('span', { class: 'path' }, x.path), h('div', { class: 'next' }, `document ${x.documentId}, uploaded ${when(x.uploadedAt)}: no chunks after the ingestion delay`)));
  if (!parts.length) parts.push(h('p', { class: 'muted empty' }, 'No problems.'));
  box.replaceChildren(...parts);
}

const HISTORY_COUNTS = ['uploaded', 'replaced', 'renamed', 'deleted', 'skipped', 'failed'];

/** The last passes of each mapping, newest first: one table per mapping (issue 25.7). */
function renderPassHistory() {
  const s = state.status;
  if (!s) return;
  const parts = [];
  for (const m of s.mappings) {
    const passes = [...(m.history || [])].reverse();
    parts.push(h('h3', { class: 'sub' }, `${m.id} · last ${passes.length} pass(es)`));
    if (!passes.length) {
      parts.push(h('p', { class: 'muted' }, 'No passes recorded yet.'));
      continue;
    }
    parts.push(h('div', { class: 'scroll' }, h('table', { class: 'grid pass-history', 'data-mapping': m.id },
      h('thead', {}, h('tr', {}, h('th', {}, 'started'), h('th', {}, 'kind'), h('th', { class: 'num' }, 'took'), h('th', {}, 'result'), HISTORY_COUNTS.map((k) => h('th', { class: 'num opt' }, k)), h('th', {}, 'first errors'))),
      h('tbody', {}, passes.map((p) => h('tr', { class: p.ok ? undefined : 'not-ok' },
        h('td', { class: 'time', title: p.startedAt }, when(p.startedAt)),
        h('td', {}, p.kind),
        h('td', { class: 'num' }, ms(p.durationMs)),
        h('td', { class: p.ok ? 'r-done' : 'r-failed' }, p.ok ? 'ok' : 'not ok'),
        HISTORY_COUNTS.map((k) => h('td', { class: 'num opt' }, num(p[k]))),
        h('td', { class: 'path' }, [p.error, ...p.errors].filter(Boolean).join(' · ')),
      ))),
    )));
  }
  $('pass-history').replaceChildren(...parts);
}

// ---- charts (uPlot, vendored) ---------------------------------------------------------

// Points are 10-second buckets. A per-minute series is the count of the minute ending at
// each point (the bucket and the five before it), not a bucket times six: one failure is
// 1/min, never 6/min. Lag samples are sparse (only when something was sent): drawn as dots.
const HOUR = 3600;
const lastMinute = (key) => (p, i, points) => {
  let n = 0;
  for (let j = i; j >= 0 && points[j].t > p.t - 60; j--) n += points[j][key];
  return n;
};
const CHARTS = {
  'chart-ops': { series: [['ops/min', '#2d6aa3', lastMinute('ops')], ['failed/min', '#b83232', lastMinute('failed')]] },
  'chart-lag': { dots: true, series: [['p50', '#2f7d54', (p) => (p.lagP50 === undefined ? null : p.lagP50 / 1000)], ['p95', '#a8690f', (p) => (p.lagP95 === undefined ? null : p.lagP95 / 1000)]] },
  'chart-req': { series: [['req/s', '#2d6aa3', (p) => p.requests / 10], ['429/s', '#b83232', (p) => p.throttled / 10], ['retries/s', '#a8690f', (p) => p.retries / 10]] },
};
/** Ticks a minute apart at least: labels are HH:MM, so none repeats. */
const MINUTE_TICKS = [60, 120, 300, 600, 900, 1200, 1800, 3600];
/** The y axis as wide as its longest label ("1,000" is not clipped to ",000"). */
const yAxisSize = (u, values) => 18 + 7 * Math.max(1, ...(values || []).map((v) => String(v).length));

function renderCharts() {
  if (typeof uPlot === 'undefined') return;
  const xs = state.points.map((p) => p.t);
  for (const [id, def] of Object.entries(CHARTS)) {
    const data = [xs, ...def.series.map(([, , f]) => state.points.map((p, i, all) => f(p, i, all)))];
    const el = $(id);
    const existing = state.charts[id];
    if (existing) {
      existing.setData(data);
      continue;
    }
    const axis = { stroke: getComputedStyle(document.body).color, grid: { stroke: 'rgba(128,128,128,.15)' }, ticks: { stroke: 'rgba(128,128,128,.25)' } };
    state.charts[id] = new uPlot({
      width: Math.max(200, el.clientWidth),
      height: 150,
      cursor: { drag: { x: false, y: false } },
      // The x axis is always the last hour ("Last hour"), however young the daemon.
      scales: { x: { time: true, range: (u, min, max) => (max == null ? [Date.now() / 1000 - HOUR, Date.now() / 1000] : [max - HOUR, max]) }, y: { range: (u, min, max) => [0, Math.max(1, max)] } },
      axes: [{ ...axis, incrs: MINUTE_TICKS, values: (u, ticks) => ticks.map((t) => clock(new Date(t * 1000).toISOString()).slice(0, 5)) }, { ...axis, size: yAxisSize }],
      series: [{}, ...def.series.map(([label, stroke]) => ({ label, stroke, width: 1.5, spanGaps: false, points: def.dots ? { show: true, size: 5, fill: stroke } : { show: false } }))],
    }, data, el);
    new ResizeObserver(() => state.charts[id].setSize({ width: Math.max(200, el.clientWidth), height: 150 })).observe(el.parentElement);
  }
}

// ---- coverage (GET /coverage: counted by the daemon when asked) ------------------------

const COVERAGE_COLUMNS = [
  ['as is', (c) => c.asIs],
  ['converted', (c) => c.converted],
  ['no text', (c) => c.noText, 'warn'],
  ['unchecked', (c) => c.unchecked, 'warn'],
  ['skipped: policy', (c) => c.skipped.policy],
  ['too big', (c) => c.skipped.tooBig, 'warn'],
  ['unsupported', (c) => c.skipped.unsupported],
  ['failed: conversion', (c) => c.failed.conversion, 'bad'],
  ['refused', (c) => c.failed.refused, 'bad'],
  ['pending', (c) => c.pending],
];

function coverageTable(m) {
  const row = (label, c, cls) => h('tr', { class: cls }, h('td', { class: 'path' }, label), COVERAGE_COLUMNS.map(([, f, tone]) => h('td', { class: `num${tone && f(c) > 0 ? ` ${tone}-text` : ''}` }, num(f(c)))));
  return h('div', { class: 'scroll' }, h('table', { class: 'grid coverage', 'data-mapping': m.mappingId },
    h('thead', {}, h('tr', {}, h('th', {}, 'extension'), COVERAGE_COLUMNS.map(([label]) => h('th', { class: 'num' }, label)))),
    h('tbody', {}, m.rows.map((r) => row(r.extension || '(none)', r)), row('total', m.total, 'total')),
  ));
}

async function loadCoverage() {
  const button = $('coverage-count');
  button.disabled = true;
  try {
    const { coverage } = await getJson('coverage');
    $('coverage').replaceChildren(...coverage.flatMap((m) => [
      h('h3', { class: 'sub' }, `${m.mappingId} · ${m.path}`),
      m.error ? h('p', { class: 'bad-text' }, `not counted: ${m.error}`) : m.rows.length ? coverageTable(m) : h('p', { class: 'muted' }, 'No files.'),
    ]));
  } catch (e) {
    $('coverage').replaceChildren(h('p', { class: 'bad-text' }, `could not count: ${e.message}`));
  } finally {
    button.disabled = false;
  }
}

$('coverage-count').addEventListener('click', () => loadCoverage());

function renderAll() {
  renderHeader();
  renderMappings();
  renderActivity();
  renderProblems();
  renderPassHistory();
  renderCharts();
}

// ---- sign in (the link of `dssync status --open`, or the token) --------------------------------

function showLogin(show) {
  $('login').hidden = !show;
}

$('login-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const token = $('login-token').value;
  const r = await fetch('login', { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) });
  $('login-token').value = '';
  if (!r.ok) {
    $('login-error').textContent = 'wrong token';
    return;
  }
  $('login-error').textContent = '';
  load().catch(() => undefined);
});

$('f-mapping').addEventListener('change', () => renderActivity());
$('f-kind').addEventListener('change', () => renderActivity());
$('f-code').addEventListener('change', () => renderProblems());
// Relative times ("5s ago") move on even when nothing happens.
setInterval(() => {
  renderHeader();
  if (state.status && state.status.mappings.some((m) => m.currentPass)) renderMappings();
}, 5000);

load().catch((e) => {
  if (String(e.message).includes('sign in')) return;
  setConn('gone');
  setTimeout(() => location.reload(), 5000);
});
