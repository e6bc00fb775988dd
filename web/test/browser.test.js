// The playground and the corpus in headless Chromium (Debian's, driven by
// playwright-core): the page's numbers equal the native outcome, a
// failure switch changes the status, a late store leaves the page
// responsive, the corpus is byte for byte the native one, and at 1400 and
// 390 px the page says what each bundled snapshot says. Writes
// target/web/playground.png, playground-390.png and figures.json.
//
// Run by web/run, which builds the package, installs Chromium when it is
// missing and installs playwright-core with the package's dev tools.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { readFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(path.join(root, 'packages/ctxpack/package.json'));
const { chromium } = require('playwright-core');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const out = path.join(root, 'target/web');
const figures = {};

let server;
let base;
let browser;

const expected = (name) => JSON.parse(readFileSync(path.join(root, 'tests/expected', name), 'utf8'));

before(async () => {
  server = spawn(process.execPath, [path.join(root, 'web/server.js'), '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  base = await new Promise((resolve, reject) => {
    server.stdout.once('data', (d) => resolve(/http:\/\/[\d.:]+\//.exec(String(d))[0]));
    server.once('exit', (code) => reject(new Error(`the server exited (${code})`)));
  });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
});

after(async () => {
  await browser?.close();
  server?.kill();
  mkdirSync(out, { recursive: true });
  writeFileSync(path.join(out, 'figures.json'), `${JSON.stringify(figures, null, 2)}\n`);
});

async function open(query = '') {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1400 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.errors = errors;
  await page.goto(`${base}${query}`);
  await page.waitForFunction(() => window.ctxpackPlayground?.ready, null, { timeout: 30000 });
  return page;
}

/** Opens a bundled scenario from the menu and waits for its assembly. */
async function choose(page, name) {
  const runs = await page.evaluate(() => window.ctxpackPlayground.runs);
  await page.selectOption('#scenario', name);
  await page.waitForFunction((n) => window.ctxpackPlayground.runs > n, runs, { timeout: 30000 });
}

async function assembleAndWait(page) {
  const runs = await page.evaluate(() => window.ctxpackPlayground.runs);
  await page.click('#assemble');
  await page.waitForFunction((n) => window.ctxpackPlayground.runs > n, runs, { timeout: 30000 });
}

test('the corpus in Chromium equals the native expected files', async () => {
  const page = await browser.newPage();
  await page.goto(`${base}web/conformance.html`);
  await page.waitForFunction(() => window.conformance?.done, null, { timeout: 120000 });
  const result = await page.evaluate(() => window.conformance);
  assert.ok(result.total >= 40, `${result.total} scenarios`);
  assert.deepEqual(result.failed, []);
  await page.close();
});

test('the playground shows the native numbers for the bundled scenario', async () => {
  const page = await open();
  const native = expected('seed-002-happy-path.json').reply.pack.snapshot;
  const shown = await page.evaluate(() => ({
    used: Number(document.getElementById('budget-numbers').dataset.used),
    limit: Number(document.getElementById('budget-numbers').dataset.limit),
    status: document.getElementById('status').textContent,
    id: document.getElementById('snapshot-id').dataset.id,
    rows: [...document.querySelectorAll('#candidates tbody tr')].map((tr) => tr.dataset.id),
    segments: [...document.querySelectorAll('#bar .segment')].map((s) => [s.dataset.label, Number(s.dataset.tokens)]),
    prefix: Number(document.querySelector('.prefix-marker')?.dataset.tokens),
    firstPackMs: window.ctxpackPlayground.firstPackMs,
  }));
  assert.equal(shown.used, native['tokens-used']);
  assert.equal(shown.limit, native['token-budget']);
  assert.equal(shown.status, native.status.join(' + '));
  assert.equal(shown.id, native.id);
  assert.deepEqual(shown.rows, native.entries.map((e) => e.id));
  assert.equal(shown.prefix, native['stable-prefix-tokens']);
  // The bar: every section's tokens, overhead and free add up to the budget.
  const total = shown.segments.reduce((n, [, t]) => n + t, 0);
  assert.equal(total, native['token-budget']);
  const free = shown.segments.find(([label]) => label === 'free')[1];
  assert.equal(free, native['token-budget'] - native['tokens-used']);
  // The table sorts by a column, both ways: tokens most first, then
  // fewest first.
  const tokens = () => page.$$eval('#candidates tbody tr td:nth-child(6)', (tds) => tds.map((td) => parseInt(td.textContent, 10)));
  await page.click('#candidates th[data-key=tokens]');
  const down = await tokens();
  assert.deepEqual(down, [...down].sort((a, b) => b - a));
  await page.click('#candidates th[data-key=tokens]');
  const up = await tokens();
  assert.deepEqual(up, [...down].sort((a, b) => a - b));
  assert.notDeepEqual(up, down);
  figures.pageLoadToFirstPackMs = shown.firstPackMs;
  // Warm first: the engine compiles hot code better after a while.
  await page.evaluate(() => window.ctxpackPlayground.measure(1000));
  const measured = await page.evaluate(() => window.ctxpackPlayground.measure(2000));
  figures.seed002PerCallMs = measured.perCallMs;
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('failure switches: degraded, failed; a late store leaves the page responsive', async () => {
  const page = await open('?scenario=full-sources');
  assert.equal(await page.textContent('#status'), 'complete');
  // Retrieval fails: the pack is degraded and the diff shows what left.
  await page.check('#fail-retrieve');
  await assembleAndWait(page);
  assert.equal(await page.textContent('#status'), 'degraded');
  assert.equal(await page.textContent('#last-retrieve'), 'failed: retrieve switched off in the playground');
  const left = await page.$$eval('#diff tbody tr.change-left td:first-child', (tds) => tds.map((td) => td.textContent));
  assert.ok(left.includes('src/parser.rs#array'), left.join(', '));
  await page.uncheck('#fail-retrieve');
  // The policy fails: no pack, the failed snapshot's candidates shown.
  await page.check('#fail-review');
  await assembleAndWait(page);
  assert.equal(await page.textContent('#status'), 'failed');
  assert.match(await page.textContent('#error'), /policy\.review/);
  await page.uncheck('#fail-review');
  // A store that answers 1.5 s late: the page goes on answering meanwhile.
  await page.fill('#delay-retrieve', '1500');
  await page.dispatchEvent('#delay-retrieve', 'change');
  const runs = await page.evaluate(() => window.ctxpackPlayground.runs);
  await page.click('#assemble');
  await page.waitForFunction(() => document.getElementById('last-retrieve').textContent.startsWith('waiting'));
  const t = Date.now();
  await page.fill('#filter', 'turn');
  const rows = await page.$$eval('#candidates tbody tr', (trs) => trs.length);
  assert.ok(Date.now() - t < 1000, 'the page answered while the store was late');
  assert.equal(await page.textContent('#status'), 'assembling…');
  assert.equal(rows, 1);
  await page.waitForFunction((n) => window.ctxpackPlayground.runs > n, runs, { timeout: 10000 });
  assert.equal(await page.textContent('#status'), 'complete');
  await page.fill('#filter', '');
  await page.dispatchEvent('#filter', 'input');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('untrusted text is fenced, and only it', async () => {
  const page = await open('?scenario=repro-memory-and-summariser-down');
  const fenced = await page.$$eval('#context .entry.fenced', (els) => els.map((e) => e.dataset.id));
  const reply = expected('repro-memory-and-summariser-down.json').reply;
  const untrusted = reply.pack.entries.filter((e) => e.trust === 'untrusted').map((e) => e.id);
  assert.ok(untrusted.length >= 1);
  assert.deepEqual(fenced, untrusted);
  assert.equal(await page.$$eval('#context .entry', (els) => els.length), reply.pack.entries.length);
  await page.close();
});

test('a chat scenario shows the provider request, each message whose it is', async () => {
  const name = 'chat-anthropic-thinking-tools-breakpoints';
  const page = await open(`?scenario=${name}`);
  assert.equal(await page.isHidden('#provider-request'), false);
  assert.equal(await page.textContent('#request-shape'), 'anthropic');
  const chat = expected(`${name}.json`).reply.pack.chat;
  const sources = await page.$$eval('#request-messages li', (els) => els.map((e) => e.dataset.source));
  assert.deepEqual(sources, chat.sources.map((s) => (s === null ? '' : String(s))));
  const hinted = await page.$$eval('#request-messages li', (els) => els.map((e, i) => (e.querySelector('.hint') ? i : -1)).filter((i) => i >= 0));
  assert.deepEqual(hinted, [3]);
  assert.match(await page.textContent('#request-rest'), /"system"/);
  assert.deepEqual(page.errors, []);
  await page.close();
  // A request without a chat shows none.
  const plain = await open('?scenario=rag-dedup');
  assert.equal(await plain.isHidden('#provider-request'), true);
  await plain.close();
});

// The snapshot as the package hands it to the page: camelCase keys.
const camel = (v) => (Array.isArray(v) ? v.map(camel)
  : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k.replace(/-([a-z])/g, (_, c) => c.toUpperCase()), camel(x)]))
    : v);

/** The expected pack (if any) and snapshot of a scenario, whatever its reply. */
function expectedOutcome(name) {
  const { reply } = expected(name);
  const pack = reply.pack ?? reply.handled?.dispatch?.fallback?.pack ?? null;
  const snapshot = pack?.snapshot ?? reply.failed?.snapshot ?? null;
  return { pack: camel(pack), snapshot: camel(snapshot) };
}

const CALLS = {
  request: 'the request', retrieval: 'sources.retrieve', memory: 'sources.recall-memory',
  graph: 'sources.expand-graph', repository: 'sources.repository-state', summary: 'summarizer.summarize',
};

/**
 * What the page must say of `snapshot`, worked out here from the snapshot
 * alone: the counts (a run counts each member), the ids that stand for more
 * than one candidate and who answered them, each host candidate's rank in
 * its section, and the over-budget candidates a lower-ranked one of their
 * section beat.
 */
function oracle(snapshot) {
  const c = { taken: 0, dropped: 0, uncounted: 0, undecided: 0 };
  const ids = new Map();
  const rank = new Map();
  const next = new Map();
  const membersOf = [];
  snapshot.entries.forEach((e, i) => {
    const n = e.run ? e.run.count : 1;
    // A failed snapshot's candidates were not decided: neither taken nor dropped.
    const undecided = e.reason === 'assembly-failed';
    c[e.included ? 'taken' : undecided ? 'undecided' : 'dropped'] += n;
    if (!e.included && !undecided && e.counted === 'uncounted') c.uncounted += n;
    let members = [e.id];
    if (e.run) {
      const [, p, a] = /^(.*?)(\d+)$/.exec(e.id);
      const b = Number(/(\d+)$/.exec(e.run.lastId)[1]);
      members = Array.from({ length: b - Number(a) + 1 }, (_, k) => `${p}${Number(a) + k}`);
    }
    membersOf.push(members);
    for (const id of members) ids.set(id, [...(ids.get(id) ?? []), CALLS[e.origin]]);
    if (e.score !== null) {
      next.set(e.section, (next.get(e.section) ?? 0) + 1);
      rank.set(i, next.get(e.section));
    }
  });
  const repeated = new Map([...ids].filter(([, calls]) => calls.length > 1));
  // The dropped bar: the tokens counted of the candidates dropped for
  // each reason.
  const droppedBy = new Map();
  for (const e of snapshot.entries) {
    if (e.included || e.counted === 'uncounted' || e.reason === 'assembly-failed' || e.tokens === 0) continue;
    const why = typeof e.reason === 'string' ? e.reason : Object.keys(e.reason)[0].replace(/[A-Z]/g, (m) => `-${m.toLowerCase()}`);
    droppedBy.set(`dropped, ${why}`, (droppedBy.get(`dropped, ${why}`) ?? 0) + e.tokens);
  }
  const beaten = new Map();
  snapshot.entries.forEach((e, i) => {
    if (!e.reason?.overBudget || !rank.has(i)) return;
    const by = snapshot.entries.filter((o, j) => o.section === e.section && o.included && rank.get(j) > rank.get(i));
    if (by.length) beaten.set(i, by.map((o) => o.id));
  });
  return { c, repeated, rank, beaten, membersOf, droppedBy };
}

/** What the page shows, read off its DOM. */
const readPage = (page) => page.evaluate(() => {
  const figs = (el) => Object.fromEntries([...(el?.querySelectorAll('.fig') ?? [])].map((f) => [f.querySelector('.label')?.textContent.trim(), f.querySelector('b')?.textContent]));
  // Every digit outside a table cell, the page's JSON and the rendered
  // text is part of a figure with words besides its number, an id, a
  // layer's name, or a message quoted from the snapshot.
  const unlabelled = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!/\d/.test(n.textContent) || n.parentElement.closest('td, pre, textarea, select, script, .id, .name, .layer, .formula, .said, [hidden]')) continue;
    const f = n.parentElement.closest('.fig');
    if (!f || !/\p{L}/u.test(f.textContent.replace(f.querySelector('b')?.textContent ?? '', ''))) unlabelled.push(n.textContent.trim());
  }
  const rows = [...document.querySelectorAll('#candidates tbody tr')].map((tr) => ({
    id: tr.dataset.id,
    count: Number(tr.dataset.count),
    taken: tr.classList.contains('taken'),
    repeated: tr.classList.contains('repeated'),
    again: tr.querySelector('.repeated-id')?.textContent ?? null,
    passedOver: tr.querySelector('.passed-over')?.textContent ?? null,
    rank: tr.querySelector('.rank')?.textContent ?? null,
    score: tr.querySelector('.score')?.textContent ?? null,
  }));
  return {
    id: document.getElementById('snapshot-id').dataset.id,
    header: figs(document.getElementById('budget-numbers')),
    table: figs(document.getElementById('candidate-count')),
    timing: figs(document.getElementById('timing')),
    rows,
    sent: [...document.querySelectorAll('#context .entry')].map((e) => ({
      id: e.dataset.id, message: Number(e.dataset.message), role: e.querySelector('.role').textContent, text: e.querySelector('pre').textContent,
    })),
    unlabelled,
    droppedBar: [...document.querySelectorAll('#dropped-bar .segment')].map((d) => ({
      label: d.dataset.label, tokens: Number(d.dataset.tokens), says: d.querySelector('b')?.textContent ?? null,
    })),
    width: document.documentElement.scrollWidth,
    viewport: document.documentElement.clientWidth,
  };
});

/** Checks that the page says what `snapshot` (and `pack`) say. */
function saysWhatTheSnapshotSays(name, shown, snapshot, pack) {
  const { c, repeated, rank, beaten, membersOf, droppedBy } = oracle(snapshot);
  // Each dropped segment says its reason's tokens, however wide it is drawn.
  assert.deepEqual(new Map(shown.droppedBar.map((d) => [d.label.replace(/: more than$/, ''), d.tokens])), droppedBy, `${name}: the dropped bar`);
  for (const d of shown.droppedBar) assert.ok(d.says === null || Number(d.says) === d.tokens, `${name}: ${d.label} says ${d.says} of ${d.tokens}`);
  assert.equal(shown.id, snapshot.id, name);
  // The header's counts are the table's, and the snapshot's.
  assert.equal(Number(shown.header.taken), c.taken, `${name}: header taken`);
  assert.equal(Number(shown.header.dropped), c.dropped, `${name}: header dropped`);
  assert.equal(Number(shown.header['not counted'] ?? 0), c.uncounted, `${name}: header not counted`);
  assert.equal(Number(shown.header['not decided'] ?? 0), c.undecided, `${name}: header not decided`);
  assert.equal(Number(shown.table['not decided'] ?? 0), c.undecided, `${name}: table not decided`);
  assert.equal(Number(shown.table.taken), c.taken, `${name}: table taken`);
  assert.equal(Number(shown.table.dropped), c.dropped, `${name}: table dropped`);
  const sum = (taken) => shown.rows.filter((r) => r.taken === taken).reduce((n, r) => n + r.count, 0);
  assert.equal(sum(true), c.taken, `${name}: taken rows`);
  assert.equal(sum(false), c.dropped + c.undecided, `${name}: rows not taken`);
  assert.equal(shown.rows.length, snapshot.entries.length, name);
  shown.rows.forEach((row, i) => {
    const e = snapshot.entries[i];
    assert.equal(row.id, e.id, name);
    // A repeated id is marked, with how often and by which calls.
    const again = membersOf[i].filter((id) => repeated.has(id));
    assert.equal(row.repeated, again.length > 0, `${name}: ${e.id} marked`);
    for (const id of again) {
      const calls = repeated.get(id);
      assert.ok(row.again.includes(`The id ${id} was answered ${calls.length} times`), `${name}: ${id}: ${row.again}`);
      for (const call of new Set(calls)) assert.ok(row.again.includes(call), `${name}: ${id} names ${call}: ${row.again}`);
      assert.ok(row.again.includes(`from ${CALLS[e.origin]}`), `${name}: ${id} says which call this one is`);
    }
    if (!again.length) assert.equal(row.again, null, `${name}: ${e.id}`);
    // The rank that decided it, and a score that tells it from its
    // section's other ranks.
    assert.equal(row.rank, rank.has(i) ? `#${rank.get(i)}` : null, `${name}: ${e.id} rank`);
    // A drop a lower-ranked candidate beat says so, naming it, the fill's
    // order and the section's share.
    if (beaten.has(i)) {
      assert.ok(row.passedOver, `${name}: ${e.id} says why it was passed over`);
      assert.ok(row.passedOver.includes(beaten.get(i)[0]), row.passedOver);
      assert.match(row.passedOver, /rank order/);
      assert.match(row.passedOver, /share/);
    } else {
      assert.equal(row.passedOver, null, `${name}: ${e.id}`);
    }
  });
  const bySection = new Map();
  shown.rows.forEach((row, i) => {
    if (!rank.has(i)) return;
    const s = snapshot.entries[i].section;
    bySection.set(s, [...(bySection.get(s) ?? []), { score: snapshot.entries[i].score, shown: row.score }]);
  });
  for (const [section, scores] of bySection) {
    for (let k = 1; k < scores.length; k += 1) {
      const [a, b] = [scores[k - 1], scores[k]];
      if (a.score !== b.score) {
        assert.notEqual(a.shown, b.shown, `${name}: ${section} scores ${a.score} and ${b.score} read alike`);
        assert.ok(Number(a.shown) > Number(b.shown), `${name}: ${section} scores shown out of rank order`);
      }
    }
  }
  // Each entry's message and role are those of the messages form.
  if (pack) {
    assert.equal(shown.sent.length, pack.entries.length, name);
    let lastTurn = -1;
    shown.sent.forEach((s, k) => {
      const message = pack.messages[s.message];
      assert.ok(message, `${name}: ${s.id} in message ${s.message + 1} of ${pack.messages.length}`);
      assert.equal(s.role, message.role, `${name}: ${s.id}`);
      if (pack.entries[k].section === 'conversation-state') {
        // A turn is a message of its own, in order, each after the one
        // before (its text in the pack is the flat form's, markers
        // defused).
        assert.ok(s.message > lastTurn, `${name}: ${s.id} after the turn before it`);
        lastTurn = s.message;
        assert.ok(s.text.startsWith(`[${message.role}]`), `${name}: ${s.id}`);
      } else {
        assert.ok(message.content.includes(s.text), `${name}: ${s.id} is in message ${s.message + 1}`);
      }
    });
  }
}

for (const width of [1400, 390]) {
  test(`at ${width} px, the page says what each bundled snapshot says, every figure labelled, nothing wider than the screen`, async () => {
    const page = await browser.newPage({ viewport: { width, height: 900 } });
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(base);
    await page.waitForFunction(() => window.ctxpackPlayground?.ready, null, { timeout: 30000 });
    const names = await page.$$eval('#scenario option', (os) => os.map((o) => o.value));
    assert.ok(names.length >= 40, `${names.length} scenarios`);
    let checked = 0;
    for (const name of names) {
      await choose(page, name);
      const shown = await readPage(page);
      assert.ok(shown.width <= shown.viewport, `${name}: the page is ${shown.width} px wide in ${shown.viewport}`);
      assert.deepEqual(shown.unlabelled, [], `${name}: figures without a label`);
      assert.ok(shown.timing['this assembly'], `${name}: the assembly's time is labelled`);
      const { pack, snapshot } = expectedOutcome(name);
      if (!snapshot) continue;
      saysWhatTheSnapshotSays(name, shown, snapshot, pack);
      checked += 1;
    }
    assert.ok(checked >= 38, `${checked} snapshots checked`);
    assert.deepEqual(errors, []);
    await page.close();
  });
}

test('the cases a new user was confused by', async () => {
  // rag-dedup: the two duplicates are dropped without being counted, and
  // the header says so in the table's numbers.
  let page = await open('?scenario=rag-dedup');
  let shown = await readPage(page);
  assert.equal(shown.header.dropped, '2');
  assert.equal(shown.header['not counted'], '2');
  assert.equal(shown.table.dropped, '2');
  await page.close();
  // hostile-retrieval: the store answered o-1 twice.
  page = await open('?scenario=hostile-retrieval');
  shown = await readPage(page);
  const o1 = shown.rows.filter((r) => r.id === 'o-1');
  assert.equal(o1.length, 2);
  for (const r of o1) {
    assert.ok(r.repeated);
    assert.match(r.again, /answered 2 times: by sources\.retrieve twice/);
  }
  assert.deepEqual(shown.rows.filter((r) => r.repeated).map((r) => r.id), ['o-1', 'o-1']);
  // Host text is sent in the context message, whose role is system.
  assert.deepEqual(shown.sent.map((s) => [s.id, s.message, s.role]), [['system-prompt', 0, 'system'], ['o-1', 1, 'system'], ['o-empty', 1, 'system']]);
  await page.close();
  // compress-summarise at 120 tokens: four scores that order, and kb-1,
  // ranked first, says why kb-4, ranked fourth, was taken instead.
  page = await open('?scenario=compress-summarise');
  await page.fill('#budget', '120');
  await assembleAndWait(page);
  shown = await readPage(page);
  const kb = shown.rows.filter((r) => r.id.startsWith('kb-'));
  assert.deepEqual(kb.map((r) => r.rank), ['#1', '#2', '#3', '#4']);
  assert.equal(new Set(kb.map((r) => r.score)).size, 4, kb.map((r) => r.score).join(' '));
  const kb1 = kb.find((r) => r.id === 'kb-1');
  assert.match(kb1.passedOver, /lower-ranked kb-4 \(#4, 56 tokens\)/);
  assert.match(kb1.passedOver, /share \(0\.5 × 120 = 60 tokens\)/);
  const { snapshot } = await page.evaluate(() => window.ctxpackPlayground.last);
  saysWhatTheSnapshotSays('compress-summarise at 120', shown, snapshot, await page.evaluate(() => window.ctxpackPlayground.last.pack));
  // The summariser was not asked, and the page says why.
  assert.match(await page.textContent('#compressions'), /relevant-knowledge, over its share: not compressed/);
  assert.match(await page.textContent('#candidates tr[data-id="kb-1"] .why'), /needed 67 tokens \(its own, the entry overhead and the join\), and 9 remained\./);
  // The diff against the run at the default budget says how far tokens
  // were counted, as the table does.
  const after = await page.$$eval('#diff tbody tr', (trs) => Object.fromEntries(trs.map((tr) => [tr.cells[0].textContent, tr.cells[3].textContent])));
  assert.match(after['turn-0'], /not counted/);
  assert.match(after['turn-2'], /more than 15 tokens \(counting stopped\)/);
  await page.close();
});

test('a tokenizer file opened from disk counts the pack; one it cannot follow is refused by name', async () => {
  // A rank file of the 256 single bytes: one token a byte, under the
  // pattern the page asks for.
  const dir = path.join(out, 'tokenizer-files');
  mkdirSync(dir, { recursive: true });
  const ranks = Array.from({ length: 256 }, (_, b) => `${Buffer.from([b]).toString('base64')} ${b}\n`).join('');
  writeFileSync(path.join(dir, 'bytes.tiktoken'), ranks);
  writeFileSync(path.join(dir, 'unigram.json'), '{"model": {"type": "Unigram"}}');
  const page = await open('?scenario=chat-starts-on-user-turn');
  assert.equal(await page.isHidden('#tokenizer-pattern-label'), true);
  // A token a byte: the question being answered alone is 130 tokens, and
  // it is always sent, so the scenario's 90 cannot hold it.
  let runs = await page.evaluate(() => window.ctxpackPlayground.runs);
  await page.fill('#budget', '400');
  await page.press('#budget', 'Enter');
  await page.waitForFunction((n) => window.ctxpackPlayground.runs > n, runs);
  runs = await page.evaluate(() => window.ctxpackPlayground.runs);
  await page.setInputFiles('#tokenizer-file', path.join(dir, 'bytes.tiktoken'));
  await page.waitForFunction((n) => window.ctxpackPlayground.runs > n, runs);
  assert.equal(await page.inputValue('#tokenizer'), 'file:bytes.tiktoken');
  assert.equal(await page.isVisible('#tokenizer-pattern-label'), true);
  const { pack, snapshot, error } = await page.evaluate(() => window.ctxpackPlayground.last);
  assert.equal(error, null);
  assert.deepEqual(snapshot.tokenizer, { named: 'bytes.tiktoken' });
  assert.equal(snapshot.textTokens, Buffer.byteLength(pack.text));
  assert.ok(snapshot.textTokens <= snapshot.tokenBudget);
  assert.match(await page.textContent('#budget-numbers'), /tokenizer file bytes\.tiktoken$/);
  // A request that names its model, counted in the model's tokenizer:
  // the header says which, and what was taken from its profile (the
  // scenario gives its own entry overhead, and the page the budget; the
  // reply's priming is the profile's).
  const source = JSON.parse(await page.inputValue('#source'));
  source.request.model = 'gpt-4o';
  delete source.request.tokenizer;
  await page.evaluate((text) => { document.getElementById('source').value = text; }, JSON.stringify(source));
  await page.selectOption('#tokenizer', 'model');
  await assembleAndWait(page);
  assert.match(await page.textContent('#budget-numbers'), /model gpt-4o \(its tokenizer, reply-overhead\) · tokenizer o200k-base$/);
  // A file the counting does not follow: the builder is refused, naming
  // the file's field and what.
  runs = await page.evaluate(() => window.ctxpackPlayground.runs);
  await page.setInputFiles('#tokenizer-file', path.join(dir, 'unigram.json'));
  await page.waitForFunction((n) => window.ctxpackPlayground.runs > n, runs);
  assert.equal(await page.isHidden('#tokenizer-pattern-label'), true);
  assert.match(await page.textContent('#error'), /config\.tokenizers\[0\]\.text.*Unigram/);
  // Back to a built-in one: the pattern menu stays hidden.
  await page.selectOption('#tokenizer', 'o200k-base');
  assert.equal(await page.isHidden('#tokenizer-pattern-label'), true);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the controls: sorting on a phone, an empty filter, the budget field, a routed request', async () => {
  const page = await browser.newPage({ viewport: { width: 390, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${base}?scenario=hostile-retrieval`);
  await page.waitForFunction(() => window.ctxpackPlayground?.ready, null, { timeout: 30000 });
  assert.match(await page.textContent('#candidates tr:nth-child(5) .why'), /asked for 3 and answered more; by the source's own order this one came after the first 3/);
  // The headings are hidden on a phone: the menu sorts, counted tokens
  // first, most first, what was not counted last.
  assert.equal(await page.isVisible('#candidates thead'), false);
  await page.selectOption('#sort', 'tokens:-1');
  const ids = await page.$$eval('#candidates tbody tr', (trs) => trs.map((tr) => tr.dataset.id));
  assert.deepEqual(ids.slice(0, 3), ['o-1', 'o-empty', 'system-prompt']);
  assert.equal(ids.length, 7);
  await page.fill('#filter', 'nothing like this');
  assert.equal(await page.textContent('#candidates tbody'), 'No candidate matches the filter.');
  await page.fill('#filter', '');
  // A budget that is not a count of tokens is refused in words, naming
  // the field; Enter assembles.
  const runs = await page.evaluate(() => window.ctxpackPlayground.runs);
  await page.fill('#budget', '-5');
  await page.press('#budget', 'Enter');
  await page.waitForSelector('#error:not([hidden])');
  assert.match(await page.textContent('#error'), /^Budget: a whole number of tokens, 1 or more/);
  await page.fill('#budget', '40');
  await page.press('#budget', 'Enter');
  await page.waitForFunction((n) => window.ctxpackPlayground.runs > n, runs);
  assert.equal(await page.getAttribute('#budget-numbers', 'data-limit'), '40');
  assert.equal(await page.isHidden('#error'), true);
  // An edited scenario: a 90-character id, and a second candidate under
  // an id already answered, with another text.
  await choose(page, 'rag-dedup.json');
  const long = `sha256:${'9f86d081884c7d65'.repeat(5)}x`.slice(0, 90);
  await page.evaluate((id) => {
    const scenario = JSON.parse(document.getElementById('source').value);
    const items = scenario.host.retrieve.items ?? scenario.host.retrieve;
    items.find((i) => i.id === 'doc-a').id = id;
    items.find((i) => i.id === 'doc-b').id = 'doc-a-mirror';
    document.getElementById('source').value = JSON.stringify(scenario);
  }, long);
  await assembleAndWait(page);
  for (const width of [390, 1400]) {
    await page.setViewportSize({ width, height: 900 });
    assert.equal(await page.evaluate(() => document.documentElement.scrollWidth), width, `a long id at ${width} px`);
  }
  await page.setViewportSize({ width: 390, height: 900 });
  const mirrors = await page.$$eval('#candidates tr[data-id="doc-a-mirror"] .why:first-of-type', (els) => els.map((e) => e.textContent));
  assert.equal(mirrors.length, 2);
  assert.match(mirrors[1], /a candidate before it, by rank, has the same id, doc-a-mirror/);
  // The filter finds a turn inside a run.
  await choose(page, 'repro-cut-with-room.json');
  await page.fill('#filter', 'turn-3');
  assert.deepEqual(await page.$$eval('#candidates tbody tr', (trs) => trs.map((tr) => tr.dataset.count)), ['6']);
  await page.fill('#filter', '');
  // A fallback says why the router did not dispatch.
  await choose(page, 'handle-reference-gate-memory.json');
  assert.match(await page.textContent('#notice'), /^The router: route calendar matched \(confidence 0\.70, threshold 0\.40\), but the request refers back \(like last time\), so the request fell back/);
  await choose(page, 'handle-fallback-rag.json');
  assert.match(await page.textContent('#notice'), /^The router: no route was confident enough \(confidence 0\.00, threshold 0\.40\)/);
  // The retrieved turn-0 lost to the request's own; kb-forum's section
  // fills only from what the others leave.
  assert.match(await page.textContent('#candidates tr.dropped[data-id="turn-0"] .why'), /the request's own turn-0 has this id/);
  assert.match(await page.textContent('#candidates tr[data-id="kb-forum"] .why'), /supporting-context has no share in the plan/);
  // A failed assembly has no pack: nothing is said to be used or free.
  await choose(page, 'handle-policy-failure.json');
  assert.match(await page.textContent('#budget-numbers'), /budget 200 tokens: no pack, the assembly failed · taken 0 candidates · dropped 0 · not decided 2/);
  assert.equal(await page.isHidden('#bar'), true);
  // A request a skill takes is said as such, not as an error.
  await choose(page, 'handle-confident-skill.json');
  assert.equal(await page.isHidden('#error'), true);
  assert.match(await page.textContent('#notice'), /^Routed to the skill weather-skill .*the builder was not called and no store was asked/);
  assert.deepEqual(errors, []);
  await page.close();
});

test('against the previous run, the page says what a prompt cache could serve', async () => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${base}?scenario=layout-cache-first-steps`);
  await page.waitForFunction(() => window.ctxpackPlayground?.ready, null, { timeout: 30000 });
  assert.equal(await page.isHidden('#cache-served'), true, 'no previous run yet');
  // The next turn: the conversation keeps its start (turn 25), so the
  // whole previous pack is sent again first.
  await page.evaluate(() => {
    const scenario = JSON.parse(document.getElementById('source').value);
    scenario.request.conversation.push({ role: 'user', content: 'turn  40 of the chat' });
    document.getElementById('source').value = JSON.stringify(scenario);
  });
  await assembleAndWait(page);
  assert.equal(await page.getAttribute('#cache-served', 'data-boundary'), 'history');
  assert.equal(await page.getAttribute('#cache-served', 'data-tokens'), '303');
  assert.match(await page.textContent('#cache-served'), /^A prompt cache could serve 303 of 323 message tokens: the previous run's messages to the end of the conversation that leads — under the least prefix/);
  // A smaller budget moves the conversation's start: only the system
  // prompt is sent as before.
  await page.fill('#budget', '200');
  await assembleAndWait(page);
  assert.equal(await page.getAttribute('#cache-served', 'data-boundary'), 'stable');
  assert.equal(await page.getAttribute('#cache-served', 'data-tokens'), '3');
  assert.deepEqual(errors, []);
  await page.close();
});

test('a screenshot of the playground', async () => {
  // Retrieval filtered, a denial, a redaction, untrusted text; then the
  // budget cut, so the diff has something to say.
  const page = await open('?scenario=handle-fallback-rag');
  await page.fill('#budget', '110');
  await assembleAndWait(page);
  const changes = await page.$$eval('#diff tbody tr', (trs) => trs.length);
  assert.ok(changes > 0, 'the diff lists what the smaller budget changed');
  mkdirSync(out, { recursive: true });
  await page.screenshot({ path: path.join(out, 'playground.png'), fullPage: true });
  // And on a phone: the tables a card per row.
  await page.setViewportSize({ width: 390, height: 844 });
  assert.equal(await page.evaluate(() => document.documentElement.scrollWidth), 390);
  await page.screenshot({ path: path.join(out, 'playground-390.png'), fullPage: true });
  await page.close();
});

test('through a bundler (Vite) the package runs in the browser as it does in Node', async () => {
  // The application imports `ctxpack` as a dependency; Vite emits the
  // module as an asset and rewrites its URL.
  const vite = await import(pathToFileURL(path.join(root, 'packages/ctxpack/node_modules/vite/dist/node/index.js')));
  const dist = path.join(out, 'bundle');
  await vite.build({
    root: path.join(root, 'web/test/bundle'),
    logLevel: 'warn',
    configFile: false,
    resolve: { alias: { ctxpack: path.join(root, 'packages/ctxpack') } },
    build: { outDir: dist, emptyOutDir: true },
  });
  const files = new Map([['.html', 'text/html'], ['.js', 'text/javascript'], ['.wasm', 'application/wasm']]);
  const site = createServer((req, res) => {
    const file = path.join(dist, path.normalize(new URL(req.url, 'http://x').pathname === '/' ? 'index.html' : decodeURIComponent(new URL(req.url, 'http://x').pathname)));
    try {
      const body = readFileSync(file);
      res.writeHead(200, { 'content-type': files.get(path.extname(file)) ?? 'application/octet-stream' }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((r) => site.listen(0, '127.0.0.1', r));
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`http://127.0.0.1:${site.address().port}/`);
    await page.waitForFunction(() => window.snapshotId, null, { timeout: 30000 });
    const id = await page.evaluate(() => window.snapshotId);
    assert.equal(id, expected('readme-quickstart.json').reply.pack.snapshot.id);
    assert.deepEqual(errors, []);
    await page.close();
  } finally {
    site.close();
  }
});
