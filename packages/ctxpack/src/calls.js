// The calls a step may ask for, one per function the component imports:
// the capability it stands for, whether its callback takes the request's
// context first, and its arguments in order. Written by
// `cargo run -p ctxpack-codegen` from wit/world.wit: do not edit.
export const CALLS = {
  retrieve: { capability: 'sources.retrieve', context: true, params: ['query', 'limit'] },
  expandGraph: { capability: 'sources.expand-graph', context: true, params: ['itemIds', 'depth'] },
  recallMemory: { capability: 'sources.recall-memory', context: true, params: ['userId', 'query', 'limit'] },
  repositoryState: { capability: 'sources.repository-state', context: true, params: [] },
  review: { capability: 'policy.review', context: true, params: ['items'] },
  summarize: { capability: 'summarizer.summarize', context: false, params: ['requests', 'tokenizer'] },
  countTokens: { capability: 'counter.count-tokens', context: false, params: ['tokenizer', 'texts'] },
  countMessages: { capability: 'counter.count-messages', context: false, params: ['tokenizer', 'lists'] },
  splitText: { capability: 'counter.split-text', context: false, params: ['texts'] },
};

// The sources each profile may call (with its settings at their
// fullest), from the core's `Profile::sources`.
export const DEFAULT_PROFILE = 'passthrough';
export const PROFILES = {
  'passthrough': [],
  'rag': ['sources.retrieve'],
  'rag-memory': ['sources.retrieve', 'sources.recall-memory'],
  'full': ['sources.retrieve', 'sources.expand-graph', 'sources.recall-memory', 'sources.repository-state'],
};
