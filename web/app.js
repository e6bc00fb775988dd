// The playground: a scenario's request assembled in the page by the npm
// package, with the scenario's stores as callbacks that a switch makes
// fail or answer late.
import {
  init, Builder, Router, diffSnapshots, AssemblyFailed, CtxpackError, HostError, explainReason,
  PROFILES,
} from '/packages/ctxpack/src/index.js';
import { camelKeys } from '/packages/ctxpack/test/scenario.js';
import { ScenarioHost } from '/tests/js/scenario-host.js';

const $ = (id) => document.getElementById(id);
const DEFAULT = 'seed-002-happy-path.json';
const FUNCTIONS = ['retrieve', 'expandGraph', 'recallMemory', 'repositoryState', 'review', 'summarize'];
/** The sources among them, lent only when the builder's profile calls them. */
const SOURCE_OF = {
  retrieve: 'sources.retrieve', expandGraph: 'sources.expand-graph',
  recallMemory: 'sources.recall-memory', repositoryState: 'sources.repository-state',
};
const LAYERS = { l0: 'L0', l1: 'L1', l2: 'L2' };
const SECTION_COLOURS = {
  'system-prompt': '#1f4e99', 'workflow-status': '#2f6fcf', 'mandatory-instructions': '#4a8be0',
  'current-task': '#79aaf0', 'conversation-state': '#1d8a5a', 'current-diff': '#33a874',
  'tool-results': '#5cc795', 'repository-state': '#8a5a1d', 'relevant-knowledge': '#c77d1e',
  'graph-neighbours': '#e0a040', 'episodic-memory': '#a0469a', 'supporting-context': '#c774c0',
  'stage-summaries': '#6b6b9e',
};

// What the page measured, read by the browser test.
window.ctxpackPlayground = { runs: 0, firstPackMs: null, lastCallMs: null, ready: false };

const state = { scenario: null, previous: null, current: null, sort: { key: 'order', dir: 1 } };

const switches = Object.fromEntries(FUNCTIONS.map((f) => [f, { fail: false, delay: 0, last: '' }]));

function renderSwitches() {
  $('switches').replaceChildren(...FUNCTIONS.map((f) => {
    const card = document.createElement('div');
    card.className = 'switch';
    card.innerHTML = `<code>${f}</code>
      <label><input type="checkbox" id="fail-${f}"> fails</label>
      <label>late <input type="number" id="delay-${f}" min="0" step="100" value="0" aria-label="${f} answers after (ms)"> ms</label>
      <span class="last" id="last-${f}">not called</span>`;
    card.querySelector('input[type=checkbox]').addEventListener('change', (e) => {
      switches[f].fail = e.target.checked;
      card.classList.toggle('failing', e.target.checked);
    });
    card.querySelector('input[type=number]').addEventListener('change', (e) => { switches[f].delay = Math.max(0, Number(e.target.value) || 0); });
    return card;
  }));
}

/** The scenario's stores, behind the switches. */
function callbacks(scenario, builder) {
  const host = new ScenarioHost(scenario.host, { HostError, spell: camelKeys });
  const calls = PROFILES[builder.profile] ?? [];
  const out = {};
  for (const f of FUNCTIONS) {
    if (SOURCE_OF[f] !== undefined && !calls.includes(SOURCE_OF[f])) {
      $(`last-${f}`).textContent = 'not called by this profile';
      $(`last-${f}`).classList.remove('bad');
      continue;
    }
    $(`last-${f}`).textContent = 'not called';
    $(`last-${f}`).classList.remove('bad');
    out[f] = (...args) => {
      const { fail, delay } = switches[f];
      const cell = $(`last-${f}`);
      cell.textContent = delay ? `waiting ${delay} ms…` : 'called';
      const answer = () => {
        if (fail) {
          cell.textContent = 'failed (switched)';
          throw new HostError(`${f} switched off in the playground`);
        }
        try {
          const value = host[f](...args);
          cell.textContent = `answered ${Array.isArray(value) ? value.length : ''}`.trim();
          return value;
        } catch (e) {
          cell.textContent = `failed: ${e.message}`;
          throw e;
        }
      };
      if (!delay) return answer();
      return new Promise((resolve, reject) => {
        setTimeout(() => {
          try { resolve(answer()); } catch (e) { reject(e); }
        }, delay);
      });
    };
  }
  return out;
}

async function loadScenario(name) {
  const text = await (await fetch(`/tests/scenarios/${name}`)).text();
  $('source').value = text;
  const scenario = JSON.parse(text);
  const tok = scenario.request?.tokenizer;
  $('tokenizer').value = typeof tok === 'string' ? tok : 'estimate';
  $('budget').value = scenario.request?.budget ?? '';
  state.previous = null;
  state.current = null;
}

function readScenario() {
  const scenario = JSON.parse($('source').value);
  const request = camelKeys(scenario.request ?? {});
  const tok = $('tokenizer').value;
  request.tokenizer = tok === 'estimate' ? { charsPerToken: 4 } : tok;
  const budget = $('budget').value.trim();
  request.budget = budget === '' ? null : Number(budget);
  return { scenario, request, config: camelKeys(scenario.config ?? {}) };
}

async function routerOf(scenario) {
  if (!scenario.router) return null;
  let [kind, text] = Object.entries(scenario.router)[0];
  if (kind === 'file') {
    kind = text.endsWith('.json') ? 'json' : 'yaml';
    text = await (await fetch(new URL(text, new URL('/tests/scenarios/', location.href)))).text();
  }
  return Router.create(text, kind);
}

function setStatus(status, text = status) {
  const el = $('status');
  el.dataset.status = status;
  el.textContent = text;
}

async function assemble() {
  $('error').hidden = true;
  $('assemble').disabled = true;
  setStatus('running', 'assembling…');
  let parsed;
  try {
    parsed = readScenario();
  } catch (e) {
    showError(`The scenario is not JSON: ${e.message}`);
    $('assemble').disabled = false;
    setStatus('idle');
    return;
  }
  const { scenario, request, config } = parsed;
  const started = performance.now();
  let pack = null;
  let snapshot = null;
  let routed = null;
  let failure = null;
  try {
    const builder = await Builder.create(config);
    const lent = callbacks(scenario, builder);
    const router = await routerOf(scenario);
    if (router) {
      const handled = await builder.handle(router, request, lent);
      routed = handled;
      pack = handled.dispatch.fallback?.pack ?? null;
    } else {
      pack = await builder.assemble(request, lent);
    }
    snapshot = pack?.snapshot ?? null;
  } catch (e) {
    if (e instanceof AssemblyFailed) {
      failure = e;
      snapshot = e.snapshot;
    } else if (e instanceof CtxpackError) {
      failure = e;
    } else {
      failure = e;
    }
  }
  const ms = performance.now() - started;
  const pg = window.ctxpackPlayground;
  pg.runs += 1;
  pg.lastCallMs = ms;
  if (pg.firstPackMs === null && pack) pg.firstPackMs = performance.now();
  $('timing').textContent = `${ms.toFixed(2)} ms${pg.firstPackMs ? ` · page load → first pack ${pg.firstPackMs.toFixed(0)} ms` : ''}`;
  state.previous = state.current ?? state.previous;
  state.current = snapshot;
  pg.last = { pack, snapshot, routed, error: failure ? failure.message : null };
  $('snapshot-id').textContent = snapshot ? `snapshot ${snapshot.id.slice(0, 12)}…` : '';
  $('snapshot-id').dataset.id = snapshot?.id ?? '';
  render(pack, snapshot, routed, failure);
  await renderDiff();
  $('assemble').disabled = false;
}

function showError(message) {
  const el = $('error');
  el.textContent = message;
  el.hidden = false;
}

function reasonText(entry) {
  const r = entry.reason;
  if (typeof r === 'string') return r;
  const [[k, v]] = Object.entries(r);
  const name = k.replace(/[A-Z]/g, (m) => `-${m.toLowerCase()}`);
  if (k === 'overBudget') return `over-budget (needs ${v.needed}, ${v.remaining} left)`;
  return `${name}: ${typeof v === 'object' ? JSON.stringify(v) : v}`;
}

function render(pack, snapshot, routed, failure) {
  const status = snapshot ? snapshot.status : failure ? ['failed'] : routed ? ['routed'] : [];
  const main = status.includes('failed') ? 'failed' : status.includes('truncated') ? 'truncated'
    : status.includes('degraded') ? 'degraded' : status[0] ?? 'idle';
  setStatus(main, status.join(' + ') || main);
  if (failure) showError(failure.message);
  if (routed && !pack) {
    showError(`Routed to skill \`${routed.dispatch.skill.skill}\` (route ${routed.decision.route}, confidence ${routed.decision.confidence.toFixed(2)}): no context was assembled.`);
  }
  renderCalls(snapshot);
  renderBudget(pack, snapshot);
  renderContext(pack, snapshot);
  renderCandidates(snapshot);
}

const CAPABILITIES = {
  'sources.retrieve': 'retrieve', 'sources.expand-graph': 'expandGraph',
  'sources.recall-memory': 'recallMemory', 'sources.repository-state': 'repositoryState',
  'policy.review': 'review', 'summarizer.summarize': 'summarize',
};

/** Each host function's card says what the snapshot records of its call. */
function renderCalls(snapshot) {
  for (const call of snapshot?.sourceCalls ?? []) {
    const f = CAPABILITIES[call.capability];
    if (!f) continue;
    const [[kind, value]] = Object.entries(call.outcome);
    const cell = $(`last-${f}`);
    cell.textContent = kind === 'answered' ? `answered ${value}` : `${kind}: ${value}`;
    cell.classList.toggle('bad', kind === 'failed');
  }
}

function renderBudget(pack, snapshot) {
  const bar = $('bar');
  const droppedBar = $('dropped-bar');
  const legend = $('legend');
  bar.replaceChildren();
  droppedBar.replaceChildren();
  legend.replaceChildren();
  if (!snapshot) {
    $('budget-numbers').textContent = '';
    return;
  }
  const limit = snapshot.tokenBudget;
  const used = snapshot.tokensUsed;
  const bySection = new Map();
  let entryTokens = 0;
  let dropped = 0;
  const droppedBy = new Map();
  for (const e of snapshot.entries) {
    if (e.included) {
      const key = `${e.section}|${e.layer}`;
      bySection.set(key, (bySection.get(key) ?? 0) + e.tokens);
      entryTokens += e.tokens;
    } else if (e.tokens > 0) {
      dropped += e.tokens;
      const why = typeof e.reason === 'string' ? e.reason : Object.keys(e.reason)[0].replace(/[A-Z]/g, (m) => `-${m.toLowerCase()}`);
      droppedBy.set(why, (droppedBy.get(why) ?? 0) + e.tokens);
    }
  }
  const overhead = Math.max(0, used - entryTokens);
  const free = Math.max(0, limit - used);
  const scale = Math.max(limit, 1);
  const segment = (parent, tokens, colour, label, cls = '') => {
    if (tokens <= 0) return;
    const div = document.createElement('div');
    div.className = `segment ${cls}`;
    div.style.flexBasis = `${(100 * tokens) / scale}%`;
    if (colour) div.style.background = colour;
    div.title = `${label}: ${tokens} tokens`;
    div.dataset.tokens = tokens;
    div.dataset.label = label;
    if ((100 * tokens) / scale > 6) div.textContent = cls === 'gone' && (100 * tokens) / scale > 14 ? `${label.slice(9)} ${tokens}` : `${tokens}`;
    parent.append(div);
  };
  for (const [key, tokens] of bySection) {
    const [section, layer] = key.split('|');
    segment(bar, tokens, SECTION_COLOURS[section], `${section} (${LAYERS[layer]})`, `layer-${layer}`);
    const li = document.createElement('li');
    li.innerHTML = `<i style="background:${SECTION_COLOURS[section]}"></i>${section} <small>${LAYERS[layer]}</small> ${tokens}`;
    legend.append(li);
  }
  segment(bar, overhead, '#9aa3ad', 'overhead, headers and joins', 'overhead');
  segment(bar, free, null, 'free', 'free');
  droppedBar.hidden = dropped === 0;
  const shown = Math.min(dropped, scale);
  for (const [why, tokens] of droppedBy) segment(droppedBar, Math.round((tokens * shown) / Math.max(dropped, 1)), null, `dropped: ${why}`, 'gone');
  if (overhead) legend.insertAdjacentHTML('beforeend', `<li><i style="background:#9aa3ad"></i>overhead ${overhead}</li>`);
  legend.insertAdjacentHTML('beforeend', `<li><i class="free"></i>free ${free}</li>`);
  if (dropped) legend.insertAdjacentHTML('beforeend', `<li><i class="gone"></i>dropped ${dropped}${dropped > scale ? ' (bar capped at the budget)' : ''}</li>`);
  $('budget-numbers').textContent = `${used} of ${limit} used · ${free} free · ${dropped} dropped (counted) · ${snapshot.tokenizer?.charsPerToken ? `estimate ${snapshot.tokenizer.charsPerToken} chars/token` : snapshot.tokenizer}`;
  $('budget-numbers').dataset.used = used;
  $('budget-numbers').dataset.limit = limit;
}

function escapeHtml(s) {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
}

function renderContext(pack, snapshot) {
  const box = $('context');
  box.replaceChildren();
  if (!pack) return;
  const prefix = snapshot?.stablePrefixTokens ?? 0;
  let markerDone = prefix === 0;
  let leadingL0 = true;
  for (const entry of pack.entries) {
    if (!markerDone && leadingL0 && entry.layer !== 'l0') {
      box.insertAdjacentHTML('beforeend', `<div class="prefix-marker" data-tokens="${prefix}">stable prefix · ${prefix} tokens — cacheable across calls</div>`);
      markerDone = true;
    }
    if (entry.layer !== 'l0') leadingL0 = false;
    const fenced = entry.trust === 'untrusted';
    // The citation is part of the text the model reads: shown as such.
    const body = escapeHtml(entry.text).replace(/^\[source: [^\n]*\]$/m, (line) => `<span class="cite">${line}</span>`);
    const div = document.createElement('div');
    div.className = `entry ${fenced ? 'fenced' : ''} layer-${entry.layer}`;
    div.dataset.id = entry.id;
    div.innerHTML = `<div class="meta"><b>${escapeHtml(entry.id)}</b> · ${entry.section} · ${LAYERS[entry.layer]} · ${entry.role} · ${entry.tokens} tokens · <span class="trust trust-${entry.trust}">${entry.trust}${fenced ? ' — fenced: data, not instructions' : ''}</span></div><pre>${body}</pre>`;
    box.append(div);
  }
  if (!markerDone) box.insertAdjacentHTML('beforeend', `<div class="prefix-marker" data-tokens="${prefix}">stable prefix · ${prefix} tokens</div>`);
}

function candidateRows(snapshot) {
  return snapshot.entries.map((e, i) => ({
    order: i + 1,
    id: e.run ? `${e.id} … ${e.run.lastId} (${e.run.count})` : e.id,
    section: e.section,
    layer: LAYERS[e.layer],
    score: e.score,
    tokens: e.tokens,
    included: e.included,
    outcome: e.included ? `taken: ${reasonText(e)}${e.compressed ? ' (summarised)' : ''}${e.redacted ? ' (redacted)' : ''}` : reasonText(e),
    entry: e,
  }));
}

function renderCandidates(snapshot) {
  const body = $('candidates').tBodies[0];
  body.replaceChildren();
  if (!snapshot) {
    $('candidate-count').textContent = '';
    return;
  }
  const filter = $('filter').value.trim().toLowerCase();
  const show = $('show').value;
  const { key, dir } = state.sort;
  const rows = candidateRows(snapshot)
    .filter((r) => show === 'all' || (show === 'included') === r.included)
    .filter((r) => !filter || `${r.id} ${r.section} ${r.layer} ${r.outcome}`.toLowerCase().includes(filter))
    .sort((a, b) => {
      const x = a[key] ?? -Infinity;
      const y = b[key] ?? -Infinity;
      return (x < y ? -1 : x > y ? 1 : a.order - b.order) * dir;
    });
  for (const r of rows) {
    const tr = document.createElement('tr');
    tr.className = r.included ? 'taken' : 'dropped';
    tr.dataset.id = r.entry.id;
    tr.innerHTML = `<td>${r.order}</td><td>${escapeHtml(r.id)}</td><td>${r.section}</td><td>${r.layer}</td>
      <td>${r.score === null ? '' : r.score.toFixed(2)}</td><td>${r.tokens}${r.entry.counted === 'uncounted' ? ' <small>(not counted)</small>' : ''}</td>
      <td title="${escapeHtml(explainReason(r.entry.reason))}">${escapeHtml(r.outcome)}<small class="why">${escapeHtml(explainReason(r.entry.reason))}</small></td>`;
    body.append(tr);
  }
  const taken = snapshot.entries.filter((e) => e.included).length;
  $('candidate-count').textContent = `${taken} taken, ${snapshot.entries.length - taken} dropped · showing ${rows.length}`;
}

async function renderDiff() {
  const body = $('diff').tBodies[0];
  body.replaceChildren();
  if (!state.previous || !state.current) {
    $('diff-summary').textContent = state.current ? 'assemble again to compare' : '';
    return;
  }
  const diff = await diffSnapshots(state.previous, state.current);
  const side = (s) => (s ? `${s.included ? 'taken' : 'dropped'} · ${reasonText(s)} · ${s.tokens} tokens${s.position === null ? '' : ` · #${s.position + 1}`}` : '—');
  for (const c of diff.changes) {
    const tr = document.createElement('tr');
    tr.className = `change-${c.kind}`;
    tr.innerHTML = `<td>${escapeHtml(c.id)}</td><td>${c.kind}</td><td>${escapeHtml(side(c.before))}</td><td>${escapeHtml(side(c.after))}</td>`;
    body.append(tr);
  }
  $('diff-summary').textContent = diff.changes.length ? `${diff.changes.length} changes` : 'no change';
}

/**
 * Assembles the current request `n` times on one builder, the stores
 * answering at once: the time per call (the whole run over n: a browser
 * rounds each reading of its clock to 0.1 ms) and the median, in ms.
 */
async function measure(n = 200) {
  const { scenario, request, config } = readScenario();
  const builder = await Builder.create(config);
  const lent = new ScenarioHost(scenario.host, { HostError, spell: camelKeys }).lend(PROFILES[builder.profile] ?? []);
  const router = await routerOf(scenario);
  const times = [];
  const start = performance.now();
  for (let i = 0; i < n; i += 1) {
    const t = performance.now();
    try {
      await (router ? builder.handle(router, request, lent) : builder.assemble(request, lent));
    } catch (e) {
      if (!(e instanceof CtxpackError)) throw e;
    }
    times.push(performance.now() - t);
  }
  const perCallMs = (performance.now() - start) / n;
  builder.free();
  router?.free();
  times.sort((a, b) => a - b);
  const result = { n, perCallMs, medianMs: times[Math.floor(n / 2)] };
  window.ctxpackPlayground.measured = result;
  $('timing').textContent = `per call ${perCallMs.toFixed(3)} ms (${n} calls; median ${result.medianMs.toFixed(1)} ms)`;
  return result;
}
window.ctxpackPlayground.measure = measure;

async function main() {
  renderSwitches();
  const names = await (await fetch('/tests/scenarios/')).json();
  $('scenario').replaceChildren(...names.map((n) => new Option(n.replace(/\.json$/, ''), n)));
  const wanted = new URLSearchParams(location.search).get('scenario');
  const first = names.includes(`${wanted}.json`) ? `${wanted}.json` : DEFAULT;
  $('scenario').value = first;
  $('scenario').addEventListener('change', async () => { await loadScenario($('scenario').value); await assemble(); });
  $('assemble').addEventListener('click', assemble);
  $('measure').addEventListener('click', () => measure(200).catch((e) => showError(e.message)));
  $('filter').addEventListener('input', () => renderCandidates(state.current));
  $('show').addEventListener('change', () => renderCandidates(state.current));
  for (const th of $('candidates').tHead.rows[0].cells) {
    th.addEventListener('click', () => {
      const key = th.dataset.key;
      state.sort = { key, dir: state.sort.key === key ? -state.sort.dir : 1 };
      for (const other of th.parentElement.cells) other.removeAttribute('aria-sort');
      th.setAttribute('aria-sort', state.sort.dir > 0 ? 'ascending' : 'descending');
      renderCandidates(state.current);
    });
  }
  await init();
  await loadScenario(first);
  await assemble();
  window.ctxpackPlayground.ready = true;
}

main().catch((e) => showError(`The playground did not start: ${e.message}`));
