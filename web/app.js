// The playground: a scenario's request assembled in the page by the npm
// package, with the scenario's stores as callbacks that a switch makes
// fail or answer late.
import {
  init, Builder, Router, diffSnapshots, AssemblyFailed, CtxpackError, HostError, explainReason,
  PROFILES, tokenizerFile,
} from '/packages/ctxpack/src/index.js';
import { CALLS } from '/packages/ctxpack/src/calls.js';
import { camelKeys } from '/packages/ctxpack/test/scenario.js';
import { ScenarioHost } from '/tests/js/scenario-host.js';
import {
  counts, ranks, scoreDigits, repeatedIds, sayRepeated, passedOver, messageOf, memberIds,
  sayTokens, sayReason, sayAltered, reasonName,
} from '/web/facts.js';
import { $, escapeHtml, fig, idHtml, plural } from '/web/html.js';
import { LAYERS, renderBudget } from '/web/budget.js';

const DEFAULT = 'seed-002-happy-path.json';
/** The host functions, as the package's callbacks name them (from the WIT). */
const FUNCTIONS = Object.keys(CALLS);
/** The sources among them, lent only when the builder's profile calls them. */
const SOURCE_OF = Object.fromEntries(Object.entries(CALLS)
  .filter(([, c]) => c.capability.startsWith('sources.'))
  .map(([f, c]) => [f, c.capability]));
const state = {
  scenario: null, previous: null, current: null, previousPack: null, currentPack: null, sort: { key: 'order', dir: 1 },
};

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
    // The counter is asked once a round: its card says how many rounds.
    let called = 0;
    const unit = f === 'countTokens' ? 'count' : 'item';
    out[f] = (...args) => {
      const { fail, delay } = switches[f];
      const cell = $(`last-${f}`);
      called += 1;
      const rounds = called > 1 ? ` (${fig('call', called)})` : '';
      cell.innerHTML = delay ? `${fig('waiting', delay, 'ms')}…` : 'called';
      const answer = () => {
        if (fail) {
          cell.textContent = 'failed (switched)';
          throw new HostError(`${f} switched off in the playground`);
        }
        try {
          const value = host[f](...args);
          cell.innerHTML = (Array.isArray(value) ? fig('answered', value.length, plural(value.length, unit)) : 'answered') + rounds;
          return value;
        } catch (e) {
          // The store's own words, quoted (a "429" in them is no figure).
          cell.innerHTML = `failed: <q class="said">${escapeHtml(e.message)}</q>`;
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

/**
 * The tokenizer menu's estimate at `chars` characters a token (the
 * scenario's own, added to the menu when it is not there): the page
 * assembles what the scenario says.
 */
function estimateOption(chars) {
  const value = `estimate:${chars}`;
  const menu = $('tokenizer');
  if (![...menu.options].some((o) => o.value === value)) menu.add(new Option(`estimate (${chars} chars/token)`, value));
  return value;
}

/**
 * The tokenizer menu's entry for the host's counter under `name` (the
 * scenario's `host.counter` answers: a word a token), added when missing.
 */
function hostOption(name) {
  const value = `host:${name}`;
  const menu = $('tokenizer');
  if (![...menu.options].some((o) => o.value === value)) menu.add(new Option(`counted by the host (${name})`, value));
  return value;
}

async function loadScenario(name) {
  const text = await (await fetch(`/tests/scenarios/${name}`)).text();
  $('source').value = text;
  const scenario = JSON.parse(text);
  const tok = scenario.request?.tokenizer;
  if (tok == null && scenario.request?.model != null) $('tokenizer').value = 'model';
  else if (tok?.host != null) $('tokenizer').value = hostOption(tok.host);
  else $('tokenizer').value = typeof tok === 'string' ? tok : estimateOption(tok?.['chars-per-token'] ?? 4);
  $('budget').value = scenario.request?.budget ?? '';
  $('about').hidden = typeof scenario.description !== 'string';
  $('about').innerHTML = $('about').hidden ? '' : `<b>This scenario:</b> <span class="said">${escapeHtml(scenario.description)}</span>`;
  state.previous = null;
  state.current = null;
  state.previousPack = null;
  state.currentPack = null;
}

function readScenario() {
  const scenario = JSON.parse($('source').value);
  const request = camelKeys(scenario.request ?? {});
  const tok = $('tokenizer').value;
  const config = camelKeys(scenario.config ?? {});
  if (tok === 'model') {
    delete request.tokenizer;
  } else if (tok.startsWith('file:')) {
    // The file opened from disk, given to the builder under its name.
    const { name, bytes } = state.tokenizerFile;
    const pattern = $('tokenizer-pattern-label').hidden ? null : $('tokenizer-pattern').value;
    config.tokenizers = [...(config.tokenizers ?? []), tokenizerFile(name, bytes, pattern)];
    request.tokenizer = { named: name };
  } else if (tok.startsWith('host:')) {
    request.tokenizer = { host: tok.slice('host:'.length) };
  } else {
    request.tokenizer = tok.startsWith('estimate:') ? { charsPerToken: Number(tok.slice('estimate:'.length)) } : tok;
  }
  const budget = $('budget').value.trim();
  if (budget !== '' && !/^[1-9]\d*$/.test(budget)) throw new RangeError(`Budget: a whole number of tokens, 1 or more (or empty for the plan's default), not ${JSON.stringify(budget.slice(0, 20))}.`);
  request.budget = budget === '' ? null : Number(budget);
  return { scenario, request, config };
}

/**
 * A tokenizer file opened from disk (a model's tokenizer.json,
 * tekken.json or tiktoken rank file): kept as its bytes, offered in the
 * menu by its name, with the pattern menu for a rank file, which names
 * none. Assembling gives it to the builder; a file the counting does not
 * follow is refused there, naming what.
 */
async function openTokenizerFile(file) {
  const bytes = new Uint8Array(await file.arrayBuffer());
  state.tokenizerFile = { name: file.name, bytes };
  const value = `file:${file.name}`;
  const menu = $('tokenizer');
  for (const o of [...menu.options]) if (o.value.startsWith('file:')) o.remove();
  menu.add(new Option(`file: ${file.name}`, value), menu.options.length - 1);
  menu.value = value;
  const first = bytes.find((b) => b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09);
  $('tokenizer-pattern-label').hidden = first === 0x7b;
  await assemble();
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
  clearMessages();
  $('assemble').disabled = true;
  setStatus('running', 'assembling…');
  let parsed;
  try {
    parsed = readScenario();
  } catch (e) {
    showError(e instanceof RangeError ? e.message : `The scenario is not JSON: ${e.message}`);
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
  pg.lastCallMs = ms;
  if (pg.firstPackMs === null && pack) pg.firstPackMs = performance.now();
  $('timing').innerHTML = `${fig('this assembly', ms.toFixed(2), 'ms')}${pg.firstPackMs ? ` · ${fig('page load → first pack', pg.firstPackMs.toFixed(0), 'ms')}` : ''}`;
  state.previous = state.current ?? state.previous;
  state.current = snapshot;
  state.previousPack = state.currentPack ?? state.previousPack;
  state.currentPack = pack;
  pg.last = { pack, snapshot, routed, error: failure ? failure.message : null };
  $('snapshot-id').innerHTML = snapshot ? `snapshot ${idHtml(`${snapshot.id.slice(0, 12)}…`)}` : '';
  $('snapshot-id').dataset.id = snapshot?.id ?? '';
  render(pack, snapshot, routed, failure);
  await renderDiff();
  $('assemble').disabled = false;
  // Counted last: a reader waiting on `runs` sees the whole page drawn.
  pg.runs += 1;
}

function clearMessages() {
  $('error').hidden = true;
  $('notice').hidden = true;
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
  const name = reasonName(r);
  if (k === 'overBudget') return `over-budget: needed ${v.needed}, ${v.remaining} remained`;
  return `${name}: ${typeof v === 'object' ? JSON.stringify(v) : v}`;
}

function render(pack, snapshot, routed, failure) {
  const status = snapshot ? snapshot.status : failure ? ['failed'] : routed ? ['routed'] : [];
  const main = status.includes('failed') ? 'failed' : status.includes('truncated') ? 'truncated'
    : status.includes('degraded') ? 'degraded' : status[0] ?? 'idle';
  setStatus(main, status.join(' + ') || main);
  if (failure) showError(failure.message);
  if (routed && !pack) {
    const d = routed.decision;
    $('notice').innerHTML = `Routed to the skill ${idHtml(routed.dispatch.skill.skill)} (route ${idHtml(d.route)}, ${fig('confidence', d.confidence.toFixed(2))} at ${fig('threshold', d.threshold.toFixed(2))}): the skill gets the request's context built inline (its query and ids), so the builder was not called and no store was asked.`;
    $('notice').hidden = false;
  } else if (routed) {
    // A fallback: the router's decision, and why it did not dispatch.
    const d = routed.decision;
    const scored = `${fig('confidence', d.confidence.toFixed(2))}, ${fig('threshold', d.threshold.toFixed(2))}`;
    // (A confident route without a reference cue goes to its skill.)
    const why = d.lowConfidence || !d.referenceCue
      ? `no route was confident enough (${scored})`
      : `route ${idHtml(d.route ?? '')} matched (${scored}), but the request refers back (<q class="said">${escapeHtml(d.referenceCue)}</q>)`;
    $('notice').innerHTML = `The router: ${why}, so the request fell back to assembling context, below.`;
    $('notice').hidden = false;
  }
  for (const el of document.querySelectorAll('.needs-snapshot')) el.hidden = !snapshot;
  renderCalls(snapshot);
  renderBudget(pack, snapshot);
  renderContext(pack, snapshot);
  renderRequest(pack);
  renderCandidates(snapshot);
}

/** The provider's list of messages in a chat body, by shape. */
const LIST = { 'openai-chat': 'messages', 'openai-responses': 'input', anthropic: 'messages', gemini: 'contents' };

/**
 * The request to send, when the scenario's request carries a chat: the
 * body the core wrote in the chat's own shape (`pack.chat.body`), each
 * message marked as the caller's (by its index in the chat) or the pack's.
 */
function renderRequest(pack) {
  const box = $('provider-request');
  box.hidden = !pack?.chat;
  if (box.hidden) return;
  const body = JSON.parse(pack.chat.body);
  const name = LIST[pack.chat.shape];
  const list = body[name] ?? [];
  const rest = Object.fromEntries(Object.entries(body).filter(([k]) => k !== name));
  $('request-shape').textContent = pack.chat.shape;
  const items = list.map((m, k) => {
    const from = pack.chat.sources[k];
    const whose = from == null ? 'the pack\'s' : `yours, <code class="name">messages[${from}]</code>`;
    const hinted = JSON.stringify(m).includes('"cache_control"') ? ' <span class="hint">cache breakpoint</span>' : '';
    return `<li data-source="${from ?? ''}"><span class="sent">${fig('message', k + 1)} (${whose})${hinted}</span><pre>${escapeHtml(JSON.stringify(m, null, 2))}</pre></li>`;
  });
  $('request-rest').textContent = Object.keys(rest).length ? JSON.stringify(rest, null, 2) : '';
  $('request-messages').innerHTML = items.join('');
}

/** Each capability's callback. */
const CAPABILITIES = Object.fromEntries(Object.entries(CALLS).map(([f, c]) => [c.capability, f]));

/** What a capability's answer counts. */
const ANSWERED = { 'policy.review': 'verdict', 'summarizer.summarize': 'summary' };

/**
 * Each host function's card says what the snapshot records of its calls
 * (the policy is asked once per review round).
 */
function renderCalls(snapshot) {
  const byFunction = new Map();
  for (const call of snapshot?.sourceCalls ?? []) {
    const f = CAPABILITIES[call.capability];
    if (f) byFunction.set(f, [...(byFunction.get(f) ?? []), call]);
  }
  for (const [f, calls] of byFunction) {
    const cell = $(`last-${f}`);
    cell.innerHTML = calls.map((call, k) => {
      const [[kind, value]] = Object.entries(call.outcome);
      const round = calls.length > 1 ? `${fig('round', k + 1)}: ` : '';
      const one = ANSWERED[call.capability] ?? 'candidate';
      const many = one === 'summary' ? 'summaries' : `${one}s`;
      return round + (kind === 'answered' ? fig('answered', value, plural(value, one, many)) : `${kind}: <q class="said">${escapeHtml(value)}</q>`);
    }).join('<br>');
    cell.classList.toggle('bad', calls.some((c) => 'failed' in c.outcome));
  }
}

function renderContext(pack, snapshot) {
  const box = $('context');
  box.replaceChildren();
  if (!pack) {
    if (snapshot) box.innerHTML = '<p class="empty">No pack: the assembly failed, so nothing goes to the model. The candidates it had gathered are listed as the failed snapshot records them.</p>';
    return;
  }
  const prefix = snapshot?.stablePrefixTokens ?? 0;
  const marker = `<div class="prefix-marker" data-tokens="${prefix}">${fig('stable prefix', prefix, plural(prefix, 'token'))}, entry overhead included — cacheable across calls</div>`;
  let markerDone = prefix === 0;
  let leadingL0 = true;
  const sent = messageOf(pack);
  pack.entries.forEach((entry, i) => {
    if (!markerDone && leadingL0 && entry.layer !== 'l0') {
      box.insertAdjacentHTML('beforeend', marker);
      markerDone = true;
    }
    if (entry.layer !== 'l0') leadingL0 = false;
    const fenced = entry.trust === 'untrusted';
    // The citation is part of the text the model reads: shown as such.
    const body = escapeHtml(entry.text).replace(/^\[source: [^\n]*\]$/m, (line) => `<span class="cite">${line}</span>`);
    const div = document.createElement('div');
    div.className = `entry ${fenced ? 'fenced' : ''} layer-${entry.layer}`;
    div.dataset.id = entry.id;
    // Where the messages form sends it: host text goes in the context
    // message, the user's where any of it is of unverified or untrusted
    // origin (never system authority), else the system's.
    const { index, what } = sent[i];
    const recorded = snapshot?.entries.find((e) => e.id === entry.id && e.section === entry.section && e.included);
    const altered = recorded ? sayAltered(snapshot, recorded) : '';
    div.dataset.message = index;
    div.dataset.role = entry.role;
    const role = `<span class="sent" title="The messages form sends this in message ${index + 1}, ${what}">${fig('message', index + 1)} <span class="role">${entry.role}</span> (${what})</span>`;
    div.innerHTML = `<div class="meta">${idHtml(entry.id)} · ${entry.section} · <span class="layer">${LAYERS[entry.layer]}</span> · ${fig('', entry.tokens, plural(entry.tokens, 'token'))}${altered ? ` <b class="altered">${altered.trim()}</b>` : ''} · ${role} · trust <span class="trust trust-${entry.trust}">${entry.trust}${fenced ? ' — fenced: data, not instructions' : ''}</span></div><pre>${body}</pre>`;
    box.append(div);
  });
  if (!markerDone) box.insertAdjacentHTML('beforeend', marker);
}

function candidateRows(snapshot) {
  const rankOf = ranks(snapshot);
  const digits = scoreDigits(snapshot);
  const repeated = repeatedIds(snapshot);
  const seen = new Map();
  return snapshot.entries.map((e, i) => {
    // A repeated id: which of its candidates this is, and who answered.
    let again = null;
    const ids = memberIds(e).filter((id) => repeated.has(id));
    const againCount = Math.max(0, ...ids.map((id) => repeated.get(id).length));
    if (ids.length) {
      again = ids.map((id) => {
        const k = seen.get(id) ?? 0;
        seen.set(id, k + 1);
        return sayRepeated(id, repeated.get(id), k);
      }).join(' ');
    }
    return {
      order: i + 1,
      id: e.run ? `${e.id} … ${e.run.lastId}` : e.id,
      count: e.run ? e.run.count : 1,
      members: memberIds(e).join(' '),
      section: e.section,
      layer: LAYERS[e.layer],
      rank: rankOf.get(i) ?? null,
      score: e.score,
      scoreText: e.score === null ? '' : e.score.toPrecision(digits),
      // Sorted by, uncounted last either way.
      tokens: e.counted === 'uncounted' ? null : e.tokens,
      included: e.included,
      outcome: e.included ? `taken: ${reasonText(e)}${sayAltered(snapshot, e)}` : reasonText(e),
      why: sayReason(snapshot, e, explainReason),
      passedOver: passedOver(snapshot, i, rankOf),
      again,
      againCount,
      entry: e,
    };
  });
}

/** A candidate's tokens, as far as they were counted. */
function tokensHtml(r) {
  const { counted, tokens } = r.entry;
  if (counted === 'uncounted') return '<small>not counted</small>';
  if (counted === 'over') return `${fig('more than', tokens)} <small>(counting stopped)</small>`;
  return `<b>${tokens}</b>`;
}

/** Orders rows by `key`, `dir` 1 or -1; a row without a value goes last. */
function byKey(key, dir) {
  return (a, b) => {
    const [x, y] = [a[key], b[key]];
    if (x === null || y === null) return (x === null) - (y === null) || a.order - b.order;
    const cmp = typeof x === 'string' ? x.localeCompare(y, 'en', { numeric: true }) : (x > y) - (x < y);
    return cmp * dir || a.order - b.order;
  };
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
  const all = candidateRows(snapshot);
  const rows = all
    .filter((r) => show === 'all' || (show === 'included') === r.included)
    .filter((r) => !filter || `${r.members} ${r.section} ${r.layer} ${r.outcome}`.toLowerCase().includes(filter))
    .sort(byKey(key, dir));
  if (rows.length === 0) {
    body.innerHTML = `<tr class="none"><td colspan="7">No candidate ${filter ? 'matches the filter' : `is ${show === 'included' ? 'taken' : 'dropped'}`}.</td></tr>`;
  }
  for (const r of rows) {
    const tr = document.createElement('tr');
    tr.className = `${r.included ? 'taken' : 'dropped'}${r.again ? ' repeated' : ''}`;
    tr.dataset.id = r.entry.id;
    tr.dataset.count = r.count;
    const { why } = r;
    const id = `${idHtml(r.id)}${r.count > 1 ? ` <small>${fig('a run of', r.count, 'turns')}</small>` : ''}${r.again ? ` <span class="again" title="this id stands for more than one candidate">same id ×${r.againCount}</span>` : ''}`;
    const rank = r.rank === null ? '' : `<span class="rank">#${r.rank}</span> <span class="score">${r.scoreText}</span>`;
    tr.innerHTML = `<td data-label="order">${r.order}</td><td data-label="id">${id}</td><td data-label="section">${r.section}</td><td data-label="layer">${r.layer}</td>
      <td data-label="rank · score" data-rank="${r.rank ?? ''}">${rank}</td><td data-label="tokens">${tokensHtml(r)}</td>
      <td data-label="outcome" title="${escapeHtml(why)}">${escapeHtml(r.outcome)}<small class="why">${escapeHtml(why)}</small>${r.passedOver ? `<small class="why passed-over">${escapeHtml(r.passedOver)}</small>` : ''}${r.again ? `<small class="why repeated-id">${escapeHtml(r.again)}</small>` : ''}</td>`;
    body.append(tr);
  }
  const c = counts(snapshot);
  const showing = rows.reduce((n, r) => n + r.count, 0);
  $('candidate-count').innerHTML = `${fig('taken', c.taken)}, ${fig('dropped', c.dropped)}${c.undecided ? `, ${fig('not decided', c.undecided)}` : ''} · ${fig('showing', showing, plural(showing, 'candidate'))}${all.length < c.candidates ? ` in ${fig('', rows.length, plural(rows.length, 'row'))}` : ''}`;
  const count = $('candidate-count');
  count.dataset.taken = c.taken;
  count.dataset.dropped = c.dropped;
}

async function renderDiff() {
  const body = $('diff').tBodies[0];
  body.replaceChildren();
  if (!state.previous || !state.current) {
    $('diff-summary').textContent = state.current ? 'assemble again to compare' : '';
    $('diff').hidden = true;
    $('cache-served').hidden = true;
    return;
  }
  const diff = await diffSnapshots(state.previous, state.current);
  $('diff').hidden = diff.changes.length === 0;
  // How far each side's tokens were counted is its snapshot's record.
  const counted = (snapshot, id, section) => snapshot.entries.find((e) => e.section === section && memberIds(e).includes(id))?.counted ?? 'exact';
  const side = (s, snapshot, id) => (s ? `${s.included ? 'taken' : 'dropped'} · ${reasonText(s)} · ${sayTokens(counted(snapshot, id, s.section), s.tokens)}${s.position === null ? '' : ` · position ${s.position + 1} in the pack`}` : '—');
  for (const c of diff.changes) {
    const tr = document.createElement('tr');
    tr.className = `change-${c.kind}`;
    tr.innerHTML = `<td data-label="id">${idHtml(c.id)}</td><td data-label="change">${c.kind}</td><td data-label="before">${escapeHtml(side(c.before, state.previous, c.id))}</td><td data-label="after">${escapeHtml(side(c.after, state.current, c.id))}</td>`;
    body.append(tr);
  }
  const n = diff.changes.length;
  $('diff-summary').innerHTML = n ? fig('', n, plural(n, 'change')) : 'no change';
  await renderCached();
}

/**
 * A cache prefix's hash of `messages` as the snapshot records it (see
 * `cache-prefix.hash` in the WIT): each message's role, tool-call id,
 * attached tokens and content, each as its UTF-8 length, `:` and its
 * bytes, hashed with SHA-256.
 */
async function prefixHash(messages) {
  const utf8 = new TextEncoder();
  const parts = [];
  for (const m of messages) {
    for (const field of [m.role, m.toolCallId ?? '', m.attachedTokens == null ? '' : String(m.attachedTokens), m.content]) {
      const data = utf8.encode(field);
      parts.push(utf8.encode(`${data.length}:`), data);
    }
  }
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => { all.set(p, at); return at + p.length; }, 0);
  const digest = new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', all));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** The longest of `previous`'s cache prefixes that `pack` begins with byte for byte, or null. */
async function cachedPrefix(previous, pack) {
  const prefixes = [...previous.snapshot.cachePrefixes].sort((a, b) => b.messages - a.messages);
  for (const p of prefixes) {
    if (p.messages <= pack.messages.length && await prefixHash(pack.messages.slice(0, p.messages)) === p.hash) return p;
  }
  return null;
}

/**
 * What a provider's prompt cache could serve of this pack after the
 * previous run's: the longest of its cache prefixes this pack begins
 * with byte for byte.
 */
async function renderCached() {
  const box = $('cache-served');
  const [before, now] = [state.previousPack, state.currentPack];
  box.hidden = !before || !now;
  if (box.hidden) return;
  const served = await cachedPrefix(before, now);
  const total = now.snapshot.messageTokens;
  box.dataset.tokens = served?.tokens ?? 0;
  box.dataset.boundary = served?.boundary ?? '';
  if (!served) {
    box.innerHTML = 'A prompt cache serves none of these messages: their start is not the previous run\'s.';
    return;
  }
  const where = { stable: 'the stable system message', history: 'the conversation that leads', turn: 'the whole previous pack' }[served.boundary];
  const note = served.cacheable ? '' : ' — under the least prefix the model\'s provider caches, so billed whole';
  box.innerHTML = `A prompt cache could serve ${fig('', served.tokens, 'of')} ${fig('', total, plural(total, 'message token'))}: the previous run's messages to the end of ${where}${note}.`;
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
  $('timing').innerHTML = `${fig('mean per call', perCallMs.toFixed(3), 'ms')} · ${fig('calls', n)} · ${fig('median', result.medianMs.toFixed(1), 'ms')}`;
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
  // Sorting: a column's heading (a button, for the keyboard), or on a
  // narrow screen, where the headings are hidden, the sort menu.
  const sortBy = (key, dir) => {
    state.sort = { key, dir };
    for (const th of $('candidates').tHead.rows[0].cells) {
      if (th.dataset.key === key) th.setAttribute('aria-sort', dir > 0 ? 'ascending' : 'descending');
      else th.removeAttribute('aria-sort');
    }
    const option = `${key}:${dir}`;
    $('sort').value = [...$('sort').options].some((o) => o.value === option) ? option : '';
    renderCandidates(state.current);
  };
  for (const th of $('candidates').tHead.rows[0].cells) {
    th.addEventListener('click', () => {
      const { key } = th.dataset;
      // Numbers first sort highest first; the rest in reading order.
      const first = key === 'score' || key === 'tokens' ? -1 : 1;
      sortBy(key, state.sort.key === key ? -state.sort.dir : first);
    });
  }
  $('sort').addEventListener('change', () => {
    const [key, dir] = $('sort').value.split(':');
    if (key) sortBy(key, Number(dir));
  });
  $('budget').addEventListener('keydown', (e) => { if (e.key === 'Enter') assemble(); });
  // The tokenizer menu's last item opens a file; the menu goes back to
  // what it was until one is chosen.
  let chosen = $('tokenizer').value;
  $('tokenizer').addEventListener('change', () => {
    if ($('tokenizer').value === 'open-file') {
      $('tokenizer').value = chosen;
      $('tokenizer-file').click();
      return;
    }
    chosen = $('tokenizer').value;
    if (!chosen.startsWith('file:')) $('tokenizer-pattern-label').hidden = true;
  });
  $('tokenizer-file').addEventListener('change', () => {
    const [file] = $('tokenizer-file').files;
    if (file) openTokenizerFile(file).then(() => { chosen = $('tokenizer').value; }, (e) => showError(e.message));
  });
  $('tokenizer-pattern').addEventListener('change', () => assemble());
  await init();
  await loadScenario(first);
  await assemble();
  window.ctxpackPlayground.ready = true;
}

main().catch((e) => showError(`The playground did not start: ${e.message}`));
