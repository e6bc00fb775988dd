// Serves the playground and what it reads, statically, on 127.0.0.1: the
// page (web/), the npm package (packages/ctxpack: its source, its built
// WebAssembly, its scenario stores) and the scenario corpus with its
// expected outcomes. Nothing else of the repository is reachable.
//
//   node web/server.js [--port N]     (web/serve builds the package first)
//
// A directory of scenarios answers with the JSON list of its files.
import { createServer } from 'node:http';
import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SERVED = [
  '/web/',
  '/packages/ctxpack/src/',
  '/packages/ctxpack/dist/',
  '/packages/ctxpack/test/scenario.js',
  '/tests/scenarios/',
  '/tests/js/',
  '/tests/expected/',
  '/host-example/routes/',
];
const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.yaml': 'text/yaml; charset=utf-8',
  '.wasm': 'application/wasm',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

async function answer(req, res) {
  const url = new URL(req.url, 'http://localhost');
  let pathname = decodeURIComponent(url.pathname);
  if (pathname === '/') pathname = '/web/index.html';
  const file = path.join(root, path.normalize(pathname));
  const inside = SERVED.some((p) => pathname.startsWith(p) || `${pathname}/` === p);
  if (!inside || !file.startsWith(root) || pathname.includes('..')) {
    res.writeHead(404).end('not served\n');
    return;
  }
  let info;
  try {
    info = await stat(file);
  } catch {
    res.writeHead(404).end('not found\n');
    return;
  }
  if (info.isDirectory()) {
    const names = (await readdir(file)).filter((n) => n.endsWith('.json')).sort();
    res.writeHead(200, { 'content-type': TYPES['.json'], 'cache-control': 'no-store' });
    res.end(JSON.stringify(names));
    return;
  }
  const body = await readFile(file);
  res.writeHead(200, {
    'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
    'cache-control': 'no-store',
  });
  res.end(body);
}

const at = process.argv.indexOf('--port');
const port = at > 0 ? Number(process.argv[at + 1]) : 8080;
const server = createServer((req, res) => {
  answer(req, res).catch((e) => {
    res.writeHead(500).end(String(e));
  });
});
server.listen(port, '127.0.0.1', () => {
  const { port: bound } = server.address();
  // The first line is read by the browser test to find the port.
  console.log(`ctxpack playground: http://127.0.0.1:${bound}/`);
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => server.close(() => process.exit(0)));
