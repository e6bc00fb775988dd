// What LangChain.js's test imports as `../transformers.js`: ctxpack's
// trimMessages in the place of LangChain.js's; the test's other
// transformers are LangChain.js's own.
export { filterMessages, mergeMessageRuns } from '@langchain/core/messages';
export { trimMessages } from '../../src/index.js';
