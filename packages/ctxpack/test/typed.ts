// Checked by `tsc` (never run): the README's use, typed, and mistakes the
// types must catch (each `@ts-expect-error` fails the check if it is not
// an error).
import { Builder, Router, AssemblyFailed, HostError, chat, countTokens, diffSnapshots, trimMessages } from 'ctxpack';
import type { CandidateInit, ContextPack, Reason, Callbacks } from 'ctxpack';

const kb: CandidateInit = {
  id: 'kb-1', section: 'relevant-knowledge', trust: 'trusted',
  text: 'Refunds take five business days.',
  provenance: { sourceKind: 'kb', reference: 'refunds.md' },
};
const callbacks: Callbacks = {
  retrieve: async (_context, _query, limit) => [kb].slice(0, limit),
  review: (_context, items) => items.map((c) => (c.id === 'x' ? { deny: 'no' } : 'allow')),
  summarize: () => { throw new HostError('no model'); },
};

export async function use(): Promise<number> {
  const builder = await Builder.create({ profile: { rag: { retrieveLimit: 10 } } }, callbacks);
  const request = {
    context: { traceId: 't-1' }, query: 'q', tokenizer: 'o200k-base' as const,
    entryOverhead: 0, keepLast: 6, systemPrompt: 'Be brief.',
  };
  let pack: ContextPack;
  try {
    pack = await builder.assemble(request);
  } catch (e) {
    if (e instanceof AssemblyFailed) return e.snapshot?.entries.length ?? 0;
    throw e;
  }
  const reasons: Reason[] = pack.snapshot.entries.map((e) => e.reason);
  const dropped = reasons.filter((r) => typeof r === 'object' && 'overBudget' in r).length;
  const router = await Router.create('routes: []', 'yaml');
  const decision = router.route('q');
  const diff = await diffSnapshots(pack.snapshot, pack.snapshot);
  return pack.budgetUsed + dropped + diff.changes.length + (decision.lowConfidence ? 1 : 0);
}

export async function mistakes(): Promise<void> {
  // @ts-expect-error keep_last is not a field
  await Builder.create({}).then((b) => b.assemble({ context: {}, query: 'q', tokenizer: 'o200k-base', entryOverhead: 0, systemPrompt: '', keep_last: 6 }));
  // @ts-expect-error keepLast is a number
  const wrong: Parameters<Builder['assemble']>[0] = { context: {}, query: 'q', tokenizer: 'o200k-base', entryOverhead: 0, systemPrompt: '', keepLast: 'six' };
  // @ts-expect-error 'nowhere' is not a section
  const bad: CandidateInit = { ...kb, section: 'nowhere' };
  // @ts-expect-error a verdict is 'allow', { redact } or { deny }
  const cb: Callbacks = { review: () => ['maybe'] };
  void wrong; void bad; void cb;
}

export async function counted(): Promise<number> {
  const messages = [{ role: 'user', content: 'hi' }];
  const byWords = (ms: { content: string }[]) => ms.reduce((n, m) => n + m.content.split(' ').length, 0);
  const kept = await trimMessages(messages, { maxTokens: 10, tokenCounter: byWords });
  const model = { getNumTokens: async (content: unknown) => String(content).length };
  const alsoKept = await trimMessages(messages, { maxTokens: 10, tokenCounter: model });
  const cb: Callbacks = { countTokens: (_tokenizer, texts) => texts.map((t) => t.length) };
  // @ts-expect-error a counter answers a count per text, not one number
  const wrong: Callbacks = { countTokens: () => 3 };
  void cb; void wrong;
  return kept.length + alsoKept.length;
}

export async function chatted(): Promise<number> {
  const builder = await Builder.create();
  const messages = [
    { role: 'user', content: 'Weather in Lyon and Nice?' },
    { role: 'assistant', content: null, tool_calls: [
      { id: 'a', type: 'function' as const, function: { name: 'w', arguments: '{"city":"Lyon"}' } },
      { id: 'b', type: 'function' as const, function: { name: 'w', arguments: '{"city":"Nice"}' } }] },
    { role: 'tool', tool_call_id: 'a', content: 'rain' },
    { role: 'tool', tool_call_id: 'b', content: 'sun' },
  ];
  const pack = await builder.assemble({ model: 'gpt-4o', chat: chat(messages) });
  const body: { messages: unknown[] } = JSON.parse(pack.chat?.body ?? '{"messages":[]}');
  const counts = builder.count({ model: 'gpt-4o', chat: chat(messages) });
  const texts: number[] = builder.countTexts(['a', 'b'], { model: 'gpt-4o' });
  const trimmed = await builder.trim({ maxTokens: 50, tokenizer: 'o200k-base', chat: chat(messages) });
  // @ts-expect-error a shape is one the core reads
  chat(messages, 'openai-legacy');
  return body.messages.length + counts.total + texts[0] + trimmed.kept.length + await countTokens('x');
}
