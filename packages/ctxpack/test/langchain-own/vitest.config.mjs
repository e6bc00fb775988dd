// Runs LangChain.js's own trimMessages tests (message_utils.test.ts,
// verbatim from @langchain/core@1.1.1, MIT: see LICENSE) against
// ctxpack's trimMessages: the test's relative imports of LangChain's
// sources resolve to the published @langchain/core, and
// `../transformers.js` to ./transformers.js.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const here = path.dirname(fileURLToPath(import.meta.url));
const messages = path.join(here, '../../node_modules/@langchain/core/dist/messages/index.js');

export default defineConfig({
  root: here,
  test: { include: ['message_utils.test.ts'] },
  resolve: {
    alias: [
      { find: '../transformers.js', replacement: path.join(here, 'transformers.js') },
      { find: /^\.\.\/(ai|base|chat|human|system|tool|utils)\.js$/, replacement: messages },
    ],
  },
});
