// The playground and the corpus in headless Chromium (Debian's, driven by
// playwright-core): the page's numbers equal the native outcome, a
// failure switch changes the status, a late store leaves the page
// responsive, the corpus is byte for byte the native one. Writes
// target/web/playground.png and target/web/figures.json.
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
  // The table sorts by a column, both ways.
  const tokens = () => page.$$eval('#candidates tbody tr td:nth-child(6)', (tds) => tds.map((td) => parseInt(td.textContent, 10)));
  await page.click('#candidates th[data-key=tokens]');
  const up = await tokens();
  assert.deepEqual(up, [...up].sort((a, b) => a - b));
  await page.click('#candidates th[data-key=tokens]');
  const down = await tokens();
  assert.deepEqual(down, [...up].sort((a, b) => b - a));
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
