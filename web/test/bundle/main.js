// The package as an application imports it, built by Vite: the README's
// quickstart request, its snapshot id on the page for the browser test.
import { Builder } from 'ctxpack';

const builder = await Builder.create({ profile: { rag: { retrieveLimit: 10 } } }, {
  async retrieve() {
    return [{
      id: 'kb-1', section: 'relevant-knowledge', trust: 'trusted',
      text: 'Refunds take five business days.',
      provenance: { sourceKind: 'kb', reference: 'refunds.md' },
    }];
  },
});
const pack = await builder.assemble({
  context: { traceId: 't-1' }, query: 'How long do refunds take?',
  tokenizer: 'o200k-base', entryOverhead: 0, keepLast: 6,
  systemPrompt: 'Answer from the documents.',
});
document.getElementById('out').textContent = pack.snapshot.id;
window.snapshotId = pack.snapshot.id;
