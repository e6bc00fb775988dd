// The budget panel: the bar of what the pack spends by section and layer,
// what was dropped, the plan's shares and each section's compression, as
// the snapshot says.
import { $, escapeHtml, fig, idHtml, plural } from '/web/html.js';
import { counts } from '/web/facts.js';

export const LAYERS = { l0: 'L0', l1: 'L1', l2: 'L2' };
const SECTION_COLOURS = {
  'system-prompt': '#1f4e99', 'workflow-status': '#2f6fcf', 'mandatory-instructions': '#4a8be0',
  'current-task': '#79aaf0', 'conversation-state': '#1d8a5a', 'current-diff': '#33a874',
  'tool-results': '#5cc795', 'repository-state': '#8a5a1d', 'relevant-knowledge': '#c77d1e',
  'graph-neighbours': '#e0a040', 'episodic-memory': '#a0469a', 'supporting-context': '#c774c0',
  'stage-summaries': '#6b6b9e',
};

// What the page measured, read by the browser test.
window.ctxpackPlayground = { runs: 0, firstPackMs: null, lastCallMs: null, ready: false };

export function renderBudget(pack, snapshot) {
  const bar = $('bar');
  const droppedBar = $('dropped-bar');
  const legend = $('legend');
  bar.replaceChildren();
  droppedBar.replaceChildren();
  legend.replaceChildren();
  $('compressions').replaceChildren();
  if (!snapshot) {
    $('budget-numbers').textContent = '';
    return;
  }
  const limit = snapshot.tokenBudget;
  const used = snapshot.tokensUsed;
  const bySection = new Map();
  let entryTokens = 0;
  for (const e of snapshot.entries.filter((x) => x.included)) {
    const key = `${e.section}|${e.layer}`;
    bySection.set(key, (bySection.get(key) ?? 0) + e.tokens);
    entryTokens += e.tokens;
  }
  const c = counts(snapshot);
  // What was dropped, as far as it was counted, by reason ("more than"
  // where some of it was counted only in part).
  const droppedLabel = (why) => (c.byReason.get(why).partly ? `${why}: more than` : why);
  const dropped = c.droppedTokens;
  const overhead = Math.max(0, used - entryTokens);
  const free = Math.max(0, limit - used);
  const scale = Math.max(limit, 1);
  // A segment is `width` tokens wide on the bar's scale and says `tokens`
  // (the dropped bar stops at the budget, so its widths are scaled down).
  const segment = (parent, tokens, colour, label, cls = '', width = tokens) => {
    if (tokens <= 0) return;
    const div = document.createElement('div');
    div.className = `segment ${cls}`;
    div.style.flexBasis = `${(100 * width) / scale}%`;
    if (colour) div.style.background = colour;
    div.title = `${label}: ${tokens} tokens`;
    div.setAttribute('aria-label', div.title);
    div.dataset.tokens = tokens;
    div.dataset.label = label;
    // The budget bar's numbers are labelled by the legend's colours below
    // it (and their title); the dropped bar's, hatched alike, by words.
    // Either is drawn only where there is room.
    const room = (100 * width) / scale;
    if (cls === 'gone') {
      if (room > 18) div.innerHTML = fig(label.replace(/^dropped, /, ''), tokens, 'tokens');
    } else if (room > 6) {
      div.innerHTML = fig(label, tokens);
    }
    parent.append(div);
  };
  for (const [key, tokens] of bySection) {
    const [section, layer] = key.split('|');
    segment(bar, tokens, SECTION_COLOURS[section], `${section} ${LAYERS[layer]}`, `layer-${layer}`);
    legend.insertAdjacentHTML('beforeend', `<li><i style="background:${SECTION_COLOURS[section]}"></i>${fig(`${section} ${LAYERS[layer]}`, tokens, plural(tokens, 'token'))}</li>`);
  }
  segment(bar, overhead, '#9aa3ad', 'overhead, headers and joins', 'overhead');
  // A failed assembly has no pack: nothing is used, and nothing is free.
  bar.hidden = !pack;
  if (pack) segment(bar, free, null, 'free', 'free');
  droppedBar.hidden = dropped === 0;
  const shown = Math.min(dropped, scale);
  for (const [why, { tokens }] of c.byReason) {
    segment(droppedBar, tokens, null, `dropped, ${droppedLabel(why)}`, 'gone', (tokens * shown) / Math.max(dropped, 1));
  }
  if (overhead) legend.insertAdjacentHTML('beforeend', `<li><i style="background:#9aa3ad"></i>${fig('overhead, headers and joins', overhead, plural(overhead, 'token'))}</li>`);
  if (pack) legend.insertAdjacentHTML('beforeend', `<li><i class="free"></i>${fig('free', free, plural(free, 'token'))}</li>`);
  if (dropped) {
    // A candidate counted only in part had more tokens than recorded.
    const label = c.over ? 'dropped, counted: more than' : 'dropped, counted';
    const byReason = [...c.byReason].map(([why, { tokens }]) => fig(droppedLabel(why), tokens));
    legend.insertAdjacentHTML('beforeend', `<li><i class="gone"></i>${fig(label, dropped, plural(dropped, 'token'))}${byReason.length > 1 ? ` (${byReason.join(', ')})` : ''}${dropped > scale ? ' (the bar stops at the budget)' : ''}</li>`);
  }
  const tokenizer = tokenizerSaid(snapshot);
  // The candidates as the snapshot counts them; the table below counts the
  // same (a run of turns counts each member).
  const counted = [
    c.exact ? fig('counted exactly', c.exact) : '',
    c.over ? fig('counted in part', c.over) : '',
    c.uncounted ? fig('not counted', c.uncounted) : '',
  ].filter(Boolean).join(', ');
  const numbers = $('budget-numbers');
  numbers.innerHTML = [
    ...(pack ? [`${fig('used', used)} of ${fig('budget', limit, 'tokens')}`, fig('free', free)]
      : [`${fig('budget', limit, 'tokens')}: no pack, the assembly failed`]),
    fig('taken', c.taken, plural(c.taken, 'candidate')),
    `${fig('dropped', c.dropped)}${counted ? ` (${counted})` : ''}`,
    ...(c.undecided ? [`${fig('not decided', c.undecided)} (the assembly failed first)`] : []),
    tokenizer,
  ].join(' · ');
  numbers.dataset.used = used;
  numbers.dataset.limit = limit;
  numbers.dataset.taken = c.taken;
  numbers.dataset.dropped = c.dropped;
  numbers.dataset.uncounted = c.uncounted;
  numbers.dataset.undecided = c.undecided;
  renderCompressions(snapshot);
  renderPlan(snapshot, free);
}

/**
 * The plan's shares, and what a reason's "remained" is beside the free
 * tokens of the finished pack.
 */
function renderPlan(snapshot, free) {
  const budget = snapshot.tokenBudget;
  const shares = snapshot.plan.shares.map((s) => `${s.section} ${fig('share', s.share)} = ${fig('', Math.floor(s.share * budget), 'tokens')}`);
  // Sections the hosts filled (a candidate in an L0 section was refused).
  const hosted = new Set(snapshot.entries.filter((e) => e.origin !== 'request' && e.layer !== 'l0').map((e) => e.section));
  const without = [...hosted].filter((section) => !snapshot.plan.shares.some((s) => s.section === section));
  const none = without.length ? ` No share: ${without.join(', ')}, which ${without.length > 1 ? 'fill' : 'fills'} only from what the others leave.` : '';
  $('plan').innerHTML = shares.length
    ? `Shares of the ${fig('budget', budget, 'tokens')}: ${shares.join(', ')}. A section fills within its share first; what the sections leave unused flows to the others.${none}`
    : 'The plan gives no section a share: every section fills from the whole budget.';
  const least = Math.min(...snapshot.entries.map((e) => e.reason?.overBudget?.remaining ?? Infinity));
  const note = $('remained');
  note.hidden = !(least < free);
  note.innerHTML = note.hidden ? '' : `${fig('free', free)} counts the finished pack; the “remained” in a reason is what the fill had left when it considered that candidate (${fig('as few as', least)}). The fill charges each entry its overhead and a join to the one before, and holds back the reserves of sections it may compress; steps after it can free room (a reserve not needed, turns before the first user turn dropped), and the finished pack, counted whole, can need less.`;
}

/** What compression did to each section over its share, as the snapshot says. */
function renderCompressions(snapshot) {
  const list = $('compressions');
  for (const s of snapshot.compressions) {
    const [[kind, value]] = Object.entries(s.outcome);
    const li = document.createElement('li');
    li.dataset.section = s.section;
    const room = fig('room for its text', s.targetTokens, plural(s.targetTokens, 'token'));
    const said = `<q class="said">${escapeHtml(value)}</q>`;
    const what = {
      summarized: () => `summarised into ${idHtml(`summary:${s.section}`)} (${room}); in the pack with its citation: ${fig('', value, plural(value, 'token'))}`,
      cut: () => `cut to fit, not summarised (${room}): ${said}`,
      skipped: () => `not compressed: ${said}`,
      whole: () => `went in whole after all: ${said}`,
    }[kind];
    li.innerHTML = `<b>${s.section}</b>, over its share: ${what ? what() : escapeHtml(kind)}`;
    list.append(li);
  }
}

/**
 * The tokenizer the pack was counted in, as the header says it: a built-in
 * one by name, a file by the name it was given, an estimate by its rate;
 * and the model the request named, with what was taken from its profile.
 */
export function tokenizerSaid(snapshot) {
  const t = snapshot.tokenizer;
  const said = t?.charsPerToken
    ? fig('estimate', t.charsPerToken, `${plural(t.charsPerToken, 'char')} a token`)
    : t?.named != null
      ? `tokenizer file <span class="name">${escapeHtml(t.named)}</span>`
      : t?.host != null
        ? `counted by the host as <span class="name">${escapeHtml(t.host)}</span>`
        : `tokenizer <span class="name">${escapeHtml(t)}</span>`;
  const model = snapshot.model;
  if (!model) return said;
  const assumed = model.assumed.length === 0 ? '' : ` (its ${model.assumed.join(', ')})`;
  return `model <span class="name">${escapeHtml(model.profile.name)}</span>${escapeHtml(assumed)} · ${said}`;
}
