// The package README's quickstart in TypeScript, as an application would
// write it: checked by `tsc --strict` with `tsc --init`'s settings, both
// as an ES module and as CommonJS, by packages/ctxpack/artifacts.
import { Builder, explainReason } from 'ctxpack';
import type { Callbacks, CandidateInit } from 'ctxpack';

const stores: Callbacks = {
  async retrieve(context, query, limit): Promise<CandidateInit[]> {
    const docs: CandidateInit[] = [{
      id: 'kb-1', section: 'relevant-knowledge', trust: 'trusted',
      text: 'Refunds take five business days.',
      provenance: { sourceKind: 'kb', reference: 'refunds.md' },
    }];
    return docs.slice(0, limit);
  },
};

async function main(): Promise<void> {
  const builder = await Builder.create({ profile: { rag: { retrieveLimit: 10 } } }, stores);
  const pack = await builder.assemble({
    context: { traceId: 't-1' }, query: 'How long do refunds take?',
    tokenizer: 'o200k-base', entryOverhead: 0, keepLast: 6,
    systemPrompt: 'Answer from the documents.',
  });
  console.log(pack.text);
  for (const entry of pack.snapshot.entries) {
    console.log(pack.snapshot.id, entry.id, explainReason(entry.reason));
  }
}

// A rejection is unhandled, so Node prints it and exits with status 1.
void main();
