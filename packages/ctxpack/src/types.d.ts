// The WIT's types as the `ctxpack` package gives and takes them.
// Written by `cargo run -p ctxpack-codegen` from wit/*.wit and the
// core's defaults: do not edit.

/** Who and what an assembly is for. Every id is opaque to ctxpack; it only copies them into the pack and the snapshot, and uses `scopes` to decide which candidates an attempt may see. (as the package gives it) */
export interface AgentContext {
  /** Conversation session; the pack id derives from it ("unknown" when absent). */
  sessionId: string | null;
  /** Trace id of the request, copied through for the host's telemetry (in JSON, empty when left out). */
  traceId: string;
  /** End user; long-term memory is recalled only when it is present. */
  userId: string | null;
  /** Tenant the request belongs to. */
  tenantId: string | null;
  /** Project within the tenant. */
  projectId: string | null;
  /** Run (one task execution) within the project. */
  runId: string | null;
  /** Attempt within the run; a changed plan or budget is a new attempt. */
  attemptId: string | null;
  /** Scopes the attempt may read; a candidate outside them is never included. */
  scopes: string[];
}

/** Who and what an assembly is for. Every id is opaque to ctxpack; it only copies them into the pack and the snapshot, and uses `scopes` to decide which candidates an attempt may see. (as the package accepts it) */
export interface AgentContextInit {
  /** Conversation session; the pack id derives from it ("unknown" when absent). */
  sessionId?: string | null;
  /** Trace id of the request, copied through for the host's telemetry (in JSON, empty when left out). */
  traceId?: string;
  /** End user; long-term memory is recalled only when it is present. */
  userId?: string | null;
  /** Tenant the request belongs to. */
  tenantId?: string | null;
  /** Project within the tenant. */
  projectId?: string | null;
  /** Run (one task execution) within the project. */
  runId?: string | null;
  /** Attempt within the run; a changed plan or budget is a new attempt. */
  attemptId?: string | null;
  /** Scopes the attempt may read; a candidate outside them is never included. */
  scopes?: string[];
}

/** How text is turned into tokens. A budget is always counted in the tokens of the tokenizer the request names. (as the package gives it) */
export type Tokenizer =
  | "o200k-base"
  | "cl100k-base"
  | { charsPerToken: number }
  | { named: string }
  | { host: string };

/** How text is turned into tokens. A budget is always counted in the tokens of the tokenizer the request names. (as the package accepts it) */
export type TokenizerInit =
  | "o200k-base"
  | "cl100k-base"
  | { charsPerToken: number }
  | { named: string }
  | { host: string };

/** A model a request can name (`assemble-request.model`): the values a request that names it takes where it gives none. (as the package gives it) */
export interface ModelProfile {
  /** Its name. A request's is matched without regard to case, after any `owner/`; a dated name (`gpt-4o-2024-08-06`) finds the undated one. */
  name: string;
  /** The tokenizer its budget is counted in. */
  tokenizer: Tokenizer;
  /** Its context window: the most tokens its prompt and its answer together may hold. */
  contextWindow: number;
  /** Tokens kept for its answer: a request that gives no budget gets the window less this. Less than the window. */
  outputReserve: number;
  /** Tokens its chat format adds to each message (the role's header and the end-of-turn marker; OpenAI's 3 and the role's token): the entry overhead of a request that gives none. */
  messageOverhead: number;
  /** Tokens its chat format adds once to a request sent as messages, to prime the reply (OpenAI's 3, Llama 3's 5): the reply overhead of a request that gives none (in JSON, 0 when left out). */
  replyOverhead: number;
  /** The fewest tokens of a prompt's prefix its provider's prompt cache keeps (OpenAI 1,024; Claude 1,024 to 4,096 by model; Gemini 1,024 or 4,096): a pack's prefix is `cacheable` from there (see `cache-prefix`). None where no provider cache is known (a model one serves oneself). */
  cacheMinTokens: number | null;
  /** How its provider bills an image in a message: a chat's images are charged with their message by it. None where it is not known: a chat with an image is then refused, naming it. */
  images: ImageRule | null;
}

/** A model a request can name (`assemble-request.model`): the values a request that names it takes where it gives none. (as the package accepts it) */
export interface ModelProfileInit {
  /** Its name. A request's is matched without regard to case, after any `owner/`; a dated name (`gpt-4o-2024-08-06`) finds the undated one. */
  name: string;
  /** The tokenizer its budget is counted in. */
  tokenizer: TokenizerInit;
  /** Its context window: the most tokens its prompt and its answer together may hold. */
  contextWindow: number;
  /** Tokens kept for its answer: a request that gives no budget gets the window less this. Less than the window. */
  outputReserve: number;
  /** Tokens its chat format adds to each message (the role's header and the end-of-turn marker; OpenAI's 3 and the role's token): the entry overhead of a request that gives none. */
  messageOverhead: number;
  /** Tokens its chat format adds once to a request sent as messages, to prime the reply (OpenAI's 3, Llama 3's 5): the reply overhead of a request that gives none (in JSON, 0 when left out). */
  replyOverhead?: number;
  /** The fewest tokens of a prompt's prefix its provider's prompt cache keeps (OpenAI 1,024; Claude 1,024 to 4,096 by model; Gemini 1,024 or 4,096): a pack's prefix is `cacheable` from there (see `cache-prefix`). None where no provider cache is known (a model one serves oneself). */
  cacheMinTokens?: number | null;
  /** How its provider bills an image in a message: a chat's images are charged with their message by it. None where it is not known: a chat with an image is then refused, naming it. */
  images?: ImageRuleInit | null;
}

/** A provider's published rule for what an image in a message costs. An image's size is read from its bytes (PNG, JPEG, GIF, WebP, sent inline as base64); one given by URL, whose size is not known, is charged the most the rule lets an image cost, and the snapshot's `chat.bounded` says so. (as the package gives it) */
export type ImageRule =
  | { tiles: ImageTiles }
  | { patches: number }
  | "pixels"
  | "gemini-tiles"
  | "none";

/** A provider's published rule for what an image in a message costs. An image's size is read from its bytes (PNG, JPEG, GIF, WebP, sent inline as base64); one given by URL, whose size is not known, is charged the most the rule lets an image cost, and the snapshot's `chat.bounded` says so. (as the package accepts it) */
export type ImageRuleInit =
  | { tiles: ImageTilesInit }
  | { patches: number }
  | "pixels"
  | "gemini-tiles"
  | "none";

/** The prices of OpenAI's tiles. (as the package gives it) */
export interface ImageTiles {
  /** What any image costs. */
  base: number;
  /** What each 512-pixel tile adds. */
  tile: number;
}

/** The prices of OpenAI's tiles. (as the package accepts it) */
export interface ImageTilesInit {
  /** What any image costs. */
  base: number;
  /** What each 512-pixel tile adds. */
  tile: number;
}

/** A request's field whose value was taken from its model's profile. */
export type Assumed = "tokenizer" | "budget" | "entry-overhead" | "reply-overhead";

/** The model a request named: its profile, and what was taken from it. (as the package gives it) */
export interface ModelUse {
  /** The profile, as it was when the pack was assembled. */
  profile: ModelProfile;
  /** The request's fields taken from it, in the order tokenizer, budget, entry overhead, reply overhead. */
  assumed: Assumed[];
}

/** The model a request named: its profile, and what was taken from it. (as the package accepts it) */
export interface ModelUseInit {
  /** The profile, as it was when the pack was assembled. */
  profile: ModelProfileInit;
  /** The request's fields taken from it, in the order tokenizer, budget, entry overhead, reply overhead. */
  assumed: Assumed[];
}

/** A tokenizer file the model ships, read once when the builder is created: a Hugging Face `tokenizer.json` with a BPE model, byte-level (Llama 3.x, Qwen 2.5 and 3, DeepSeek V3, Phi-4, ...) or SentencePiece-style (Gemma 3), Mistral's `tekken.json`, or a tiktoken rank file. Counts equal the file's reference implementation; a file the counting does not follow (another model, a normalizer, an unknown pattern) is refused, naming what. (as the package gives it) */
export interface TokenizerFile {
  /** The name requests count with it under (`tokenizer.named`). */
  name: string;
  /** The file's text (each kind is UTF-8 text). */
  text: string;
  /** A tiktoken rank file's pattern, which the file does not name: `o200k`, `cl100k`, `llama3`, `qwen`, `qwen3.5`, `tekken`, or its regular expression. None for the JSON files, which carry theirs. */
  pattern: string | null;
}

/** A tokenizer file the model ships, read once when the builder is created: a Hugging Face `tokenizer.json` with a BPE model, byte-level (Llama 3.x, Qwen 2.5 and 3, DeepSeek V3, Phi-4, ...) or SentencePiece-style (Gemma 3), Mistral's `tekken.json`, or a tiktoken rank file. Counts equal the file's reference implementation; a file the counting does not follow (another model, a normalizer, an unknown pattern) is refused, naming what. (as the package accepts it) */
export interface TokenizerFileInit {
  /** The name requests count with it under (`tokenizer.named`). */
  name: string;
  /** The file's text (each kind is UTF-8 text). */
  text: string;
  /** A tiktoken rank file's pattern, which the file does not name: `o200k`, `cl100k`, `llama3`, `qwen`, `qwen3.5`, `tekken`, or its regular expression. None for the JSON files, which carry theirs. */
  pattern?: string | null;
}

/** The three layers of a pack, in the order they give way under pressure (L2 first, then L1; L0 never). */
export type Layer = "l0" | "l1" | "l2";

/** The sections a pack is planned in. Each belongs to exactly one layer. */
export type Section = "system-prompt" | "workflow-status" | "mandatory-instructions" | "current-task" | "conversation-state" | "current-diff" | "tool-results" | "repository-state" | "relevant-knowledge" | "graph-neighbours" | "episodic-memory" | "supporting-context" | "stage-summaries";

/** How far a candidate's text may be trusted, most trusted first. */
export type TrustTier = "system" | "trusted" | "unverified" | "untrusted";

/** Where a candidate came from. A candidate without provenance is never included. (as the package gives it) */
export interface Provenance {
  /** Kind of source: "chunk", "fact", "memory", "artifact", "request", ... */
  sourceKind: string;
  /** The chunk, fact, memory or artifact id the candidate cites. */
  reference: string;
  /** Version of the source document, when the source has versions. */
  sourceVersion: string | null;
  /** Revision of the index the candidate was retrieved from. */
  indexRevision: string | null;
}

/** Where a candidate came from. A candidate without provenance is never included. (as the package accepts it) */
export interface ProvenanceInit {
  /** Kind of source: "chunk", "fact", "memory", "artifact", "request", ... */
  sourceKind: string;
  /** The chunk, fact, memory or artifact id the candidate cites. */
  reference: string;
  /** Version of the source document, when the source has versions. */
  sourceVersion?: string | null;
  /** Revision of the index the candidate was retrieved from. */
  indexRevision?: string | null;
}

/** Role of a conversation turn. */
export type Role = "system" | "user" | "assistant" | "tool";

/** One turn of the conversation, oldest first in a request. (as the package gives it) */
export interface ConversationTurn {
  /** Who spoke. */
  role: Role;
  /** What was said. */
  content: string;
  /** On an assistant turn, the id of the tool call it makes; on a tool turn, the id of the call it answers. Turns that share an id are kept or dropped together. */
  toolCallId: string | null;
  /** Tokens of what the turn sends beside its text — its images, at what its model's provider bills for them — charged with it where it is sent as a message (the flat text carries no image). */
  attachedTokens: number | null;
}

/** One turn of the conversation, oldest first in a request. (as the package accepts it) */
export interface ConversationTurnInit {
  /** Who spoke. */
  role: Role;
  /** What was said. */
  content: string;
  /** On an assistant turn, the id of the tool call it makes; on a tool turn, the id of the call it answers. Turns that share an id are kept or dropped together. */
  toolCallId?: string | null;
  /** Tokens of what the turn sends beside its text — its images, at what its model's provider bills for them — charged with it where it is sent as a message (the flat text carries no image). */
  attachedTokens?: number | null;
}

/** Which turn a kept conversation may begin with. */
export type ConversationStart = "user-turn" | "any-turn";

/** The form the caller sends the pack in, which the budget is exact for. */
export type PackForm = "text" | "messages";

/** The order a pack is laid out in. */
export type Layout = "context-first" | "cache-first";

/** The status of the workflow the request is part of. (as the package gives it) */
export interface WorkflowStatus {
  /** Status word, e.g. "running". */
  status: string;
  /** The current stage, if any ("none" is rendered otherwise). */
  stageId: string | null;
}

/** The status of the workflow the request is part of. (as the package accepts it) */
export interface WorkflowStatusInit {
  /** Status word, e.g. "running". */
  status: string;
  /** The current stage, if any ("none" is rendered otherwise). */
  stageId?: string | null;
}

/** The summary of one completed workflow stage, oldest first in a request. (as the package gives it) */
export interface StageSummary {
  /** Stage id. */
  stageId: string;
  /** How the stage ended, e.g. "succeeded". */
  outcome: string;
  /** What the stage did. */
  summary: string;
}

/** The summary of one completed workflow stage, oldest first in a request. (as the package accepts it) */
export interface StageSummaryInit {
  /** Stage id. */
  stageId: string;
  /** How the stage ended, e.g. "succeeded". */
  outcome: string;
  /** What the stage did. */
  summary: string;
}

/** An item that may go into the context, as a host source returns it. (as the package gives it) */
export interface Candidate {
  /** Stable id, unique within one assembly. */
  id: string;
  /** Section the item is for. */
  section: Section;
  /** The text. */
  text: string;
  /** Where it came from; required for inclusion. */
  provenance: Provenance | null;
  /** How far it may be trusted. */
  trust: TrustTier;
  /** The source's relevance score (higher is better), if it has one. */
  score: number | null;
  /** Order of creation (higher is newer), for recency and eviction. */
  sequence: number | null;
  /** Scope the item belongs to; checked against the attempt's scopes. */
  scope: string | null;
  /** The tokens of `text` in the request's tokenizer, if the host already has them: used as given, without recounting, while the text is rendered unchanged (a redacted text, or one in which a spelling of the fence's markers had to be defused, is counted). A wrong count makes the budget wrong by as much. */
  tokenCount: number | null;
}

/** An item that may go into the context, as a host source returns it. (as the package accepts it) */
export interface CandidateInit {
  /** Stable id, unique within one assembly. */
  id: string;
  /** Section the item is for. */
  section: Section;
  /** The text. */
  text: string;
  /** Where it came from; required for inclusion. */
  provenance?: ProvenanceInit | null;
  /** How far it may be trusted. */
  trust: TrustTier;
  /** The source's relevance score (higher is better), if it has one. */
  score?: number | null;
  /** Order of creation (higher is newer), for recency and eviction. */
  sequence?: number | null;
  /** Scope the item belongs to; checked against the attempt's scopes. */
  scope?: string | null;
  /** The tokens of `text` in the request's tokenizer, if the host already has them: used as given, without recounting, while the text is rendered unchanged (a redacted text, or one in which a spelling of the fence's markers had to be defused, is counted). A wrong count makes the budget wrong by as much. */
  tokenCount?: number | null;
}

/** What an application asks to be packed. (as the package gives it) */
export interface AssembleRequest {
  /** Who and what the assembly is for (in JSON, every field's default when left out). */
  context: AgentContext;
  /** The user's query, raw (in JSON, empty when left out: a plain trim of a conversation has none). */
  query: string;
  /** The model the pack is for, by name (`gpt-4o`, `qwen3-8b`, `llama-3.1-8b-instruct`, or one of `builder-config.models`): what the request leaves out of `tokenizer`, `budget` and `entry-overhead` is taken from its profile, and the snapshot says what was. */
  model: string | null;
  /** The tokenizer whose tokens the budget is counted in; the model's when absent (one of the two is required). */
  tokenizer: Tokenizer | null;
  /** Most tokens the pack may hold, counted per entry. When absent: the model's window less its output reserve (within the plan's safety margin), else the plan's default budget (the snapshot records the one used). */
  budget: number | null;
  /** Tokens charged on top of each included entry for the message framing of the model's API (0 for a flat prompt). When absent: the model's message overhead, else 0. */
  entryOverhead: number | null;
  /** Tokens charged once for a pack sent as messages, as the model's chat format primes its reply (OpenAI's 3). When absent: the model's reply overhead, else 0. */
  replyOverhead: number | null;
  /** The system prompt (L0; in JSON, empty when left out). */
  systemPrompt: string;
  /** The workflow's status (L0), rendered "Status: <status>, Stage: <stage or none>". */
  workflow: WorkflowStatus | null;
  /** Mandatory instructions (L0), never truncated. */
  instructions: string[];
  /** The current task (L0), never truncated. */
  currentTask: string | null;
  /** The conversation, oldest turn first (L1). */
  conversation: ConversationTurn[];
  /** The conversation as chat messages in a provider's shape, instead of `conversation` (give one of the two): read into its turns — each message one turn with its parts, its tool calls and results, kept or dropped together —, charged as the provider is sent them, and given back in `context-pack.chat` as the request to send, the kept messages unchanged. Its system text (a system field, or the system messages that lead it) is the system prompt, after the request's own. A request that carries it is sent as messages, cache-first, unless it says otherwise. */
  chat: Chat | null;
  /** At most this many of the newest turns are considered (in JSON, every turn when left out: 4294967295, and the budget alone decides which of the oldest give way). */
  keepLast: number;
  /** Which turn the kept conversation may begin with; `user-turn` when absent. */
  conversationStart: ConversationStart | null;
  /** The form the caller sends: the budget is exact for it. When absent, either: the budget holds for both the flat text and the messages, each entry charged the entry overhead. */
  form: PackForm | null;
  /** The order the pack is laid out in; when absent, cache-first for the messages form, context-first otherwise. */
  layout: Layout | null;
  /** Summaries of completed stages, oldest first (L2). */
  stageSummaries: StageSummary[];
  /** The conversation as the previous turn's pack compacted it (its `compaction`, passed back): its first turns stand as their summary, and its tool results before `cleared` as a placeholder. When absent, nothing is compacted yet. */
  compaction: Compaction | null;
}

/** What an application asks to be packed. (as the package accepts it) */
export interface AssembleRequestInit {
  /** Who and what the assembly is for (in JSON, every field's default when left out). */
  context?: AgentContextInit;
  /** The user's query, raw (in JSON, empty when left out: a plain trim of a conversation has none). */
  query?: string;
  /** The model the pack is for, by name (`gpt-4o`, `qwen3-8b`, `llama-3.1-8b-instruct`, or one of `builder-config.models`): what the request leaves out of `tokenizer`, `budget` and `entry-overhead` is taken from its profile, and the snapshot says what was. */
  model?: string | null;
  /** The tokenizer whose tokens the budget is counted in; the model's when absent (one of the two is required). */
  tokenizer?: TokenizerInit | null;
  /** Most tokens the pack may hold, counted per entry. When absent: the model's window less its output reserve (within the plan's safety margin), else the plan's default budget (the snapshot records the one used). */
  budget?: number | null;
  /** Tokens charged on top of each included entry for the message framing of the model's API (0 for a flat prompt). When absent: the model's message overhead, else 0. */
  entryOverhead?: number | null;
  /** Tokens charged once for a pack sent as messages, as the model's chat format primes its reply (OpenAI's 3). When absent: the model's reply overhead, else 0. */
  replyOverhead?: number | null;
  /** The system prompt (L0; in JSON, empty when left out). */
  systemPrompt?: string;
  /** The workflow's status (L0), rendered "Status: <status>, Stage: <stage or none>". */
  workflow?: WorkflowStatusInit | null;
  /** Mandatory instructions (L0), never truncated. */
  instructions?: string[];
  /** The current task (L0), never truncated. */
  currentTask?: string | null;
  /** The conversation, oldest turn first (L1). */
  conversation?: ConversationTurnInit[];
  /** The conversation as chat messages in a provider's shape, instead of `conversation` (give one of the two): read into its turns — each message one turn with its parts, its tool calls and results, kept or dropped together —, charged as the provider is sent them, and given back in `context-pack.chat` as the request to send, the kept messages unchanged. Its system text (a system field, or the system messages that lead it) is the system prompt, after the request's own. A request that carries it is sent as messages, cache-first, unless it says otherwise. */
  chat?: ChatInit | null;
  /** At most this many of the newest turns are considered (in JSON, every turn when left out: 4294967295, and the budget alone decides which of the oldest give way). */
  keepLast?: number;
  /** Which turn the kept conversation may begin with; `user-turn` when absent. */
  conversationStart?: ConversationStart | null;
  /** The form the caller sends: the budget is exact for it. When absent, either: the budget holds for both the flat text and the messages, each entry charged the entry overhead. */
  form?: PackForm | null;
  /** The order the pack is laid out in; when absent, cache-first for the messages form, context-first otherwise. */
  layout?: Layout | null;
  /** Summaries of completed stages, oldest first (L2). */
  stageSummaries?: StageSummaryInit[];
  /** The conversation as the previous turn's pack compacted it (its `compaction`, passed back): its first turns stand as their summary, and its tool results before `cleared` as a placeholder. When absent, nothing is compacted yet. */
  compaction?: CompactionInit | null;
}

/** The shape a provider's API gives chat messages. */
export type ChatShape = "openai-chat" | "openai-responses" | "anthropic" | "gemini";

/** Chat messages as a provider's API takes them. (as the package gives it) */
export interface Chat {
  /** The shape they are in. */
  shape: ChatShape;
  /** JSON text: the list of messages (`messages`, `input` or `contents`), or an object holding that list under its name with the system text beside it (`system`, `systemInstruction`, `instructions`). Anything else is refused, naming it. */
  messages: string;
}

/** Chat messages as a provider's API takes them. (as the package accepts it) */
export interface ChatInit {
  /** The shape they are in. */
  shape: ChatShape;
  /** JSON text: the list of messages (`messages`, `input` or `contents`), or an object holding that list under its name with the system text beside it (`system`, `systemInstruction`, `instructions`). Anything else is refused, naming it. */
  messages: string | unknown;
}

/** What to count, and with what (`context-builder.count`). (as the package gives it) */
export interface CountRequest {
  /** The model whose tokenizer and chat format count (see `assemble-request.model`). */
  model: string | null;
  /** The tokenizer; the model's when absent (one of the two is required). A host's (`host`) is refused: it counts for itself. */
  tokenizer: Tokenizer | null;
  /** Tokens of each message's framing; the model's when absent, else 0. */
  entryOverhead: number | null;
  /** Tokens that prime the reply, once for a chat; the model's when absent, else 0. */
  replyOverhead: number | null;
  /** Texts, each counted alone (in JSON, none when left out). */
  texts: string[];
  /** A chat, counted as a request sends it, each turn as an assembly charges it. */
  chat: Chat | null;
}

/** What to count, and with what (`context-builder.count`). (as the package accepts it) */
export interface CountRequestInit {
  /** The model whose tokenizer and chat format count (see `assemble-request.model`). */
  model: string | null;
  /** The tokenizer; the model's when absent (one of the two is required). A host's (`host`) is refused: it counts for itself. */
  tokenizer: TokenizerInit | null;
  /** Tokens of each message's framing; the model's when absent, else 0. */
  entryOverhead: number | null;
  /** Tokens that prime the reply, once for a chat; the model's when absent, else 0. */
  replyOverhead: number | null;
  /** Texts, each counted alone (in JSON, none when left out). */
  texts: string[];
  /** A chat, counted as a request sends it, each turn as an assembly charges it. */
  chat: ChatInit | null;
}

/** What `count` counted. (as the package gives it) */
export interface TokenCounts {
  /** The tokenizer counted with. */
  tokenizer: Tokenizer | null;
  /** The model named, and what was taken from its profile. */
  model: ModelUse | null;
  /** Each text's tokens, in order. */
  texts: number[];
  /** The chat's system text as its message costs it, overhead included (0 without one). */
  system: number;
  /** Each turn of the chat as sent: its overhead, its text and what it sends beside it (calls, ids, images). */
  messages: number[];
  /** For each turn, the index in the chat's messages of its first. */
  turns: number[];
  /** The chat as one request: the system message, every turn and the reply's priming. */
  total: number;
}

/** What `count` counted. (as the package accepts it) */
export interface TokenCountsInit {
  /** The tokenizer counted with. */
  tokenizer: TokenizerInit | null;
  /** The model named, and what was taken from its profile. */
  model: ModelUseInit | null;
  /** Each text's tokens, in order. */
  texts: number[];
  /** The chat's system text as its message costs it, overhead included (0 without one). */
  system: number;
  /** Each turn of the chat as sent: its overhead, its text and what it sends beside it (calls, ids, images). */
  messages: number[];
  /** For each turn, the index in the chat's messages of its first. */
  turns: number[];
  /** The chat as one request: the system message, every turn and the reply's priming. */
  total: number;
}

/** How `trim` keeps messages: LangChain's `trim_messages` strategies. */
export type TrimStrategy = "last" | "first";

/** How a message is cut where `trim` keeps part of one (`allow-partial`). */
export type TextSplit = "lines" | "host";

/** A chat's messages trimmed to a budget, as LangChain's `trim_messages` trims them, but exactly, and never a tool call apart from its results. (as the package gives it) */
export interface TrimRequest {
  /** The messages. */
  chat: Chat;
  /** The most tokens the kept messages may count, as a request of them counts (the reply's priming included). */
  maxTokens: number;
  /** The model whose tokenizer and chat format count (see `assemble-request.model`). */
  model: string | null;
  /** The tokenizer; the model's when absent (one of the two is required). `host` counts each list of messages with the host's `counter.count-messages`, as the user's counter counts a list. */
  tokenizer: Tokenizer | null;
  /** Tokens of each message's framing; the model's when absent, else 0 (not for a host's counter, which counts them). */
  entryOverhead: number | null;
  /** Tokens that prime the reply; the model's when absent, else 0 (likewise). */
  replyOverhead: number | null;
  /** Which messages to keep (in JSON, `last` when left out). */
  strategy: TrimStrategy;
  /** With `last`, the system message that leads the chat is kept whatever else is. */
  includeSystem: boolean;
  /** With `last`, the kept messages begin with one of these roles (LangChain's `start_on`; none: any). */
  startOn: Role[];
  /** The kept messages end with one of these roles (LangChain's `end_on`; none: any). */
  endOn: Role[];
  /** Whether the next message that does not fit whole is cut to the room left (the newest end of it with `last`, the start with `first`): whole blocks of a list content first, then its text split (never a message of a tool call and its results). */
  allowPartial: boolean;
  /** How a text is split for `allow-partial` (in JSON, `lines`). */
  split: TextSplit;
}

/** A chat's messages trimmed to a budget, as LangChain's `trim_messages` trims them, but exactly, and never a tool call apart from its results. (as the package accepts it) */
export interface TrimRequestInit {
  /** The messages. */
  chat: ChatInit;
  /** The most tokens the kept messages may count, as a request of them counts (the reply's priming included). */
  maxTokens: number;
  /** The model whose tokenizer and chat format count (see `assemble-request.model`). */
  model: string | null;
  /** The tokenizer; the model's when absent (one of the two is required). `host` counts each list of messages with the host's `counter.count-messages`, as the user's counter counts a list. */
  tokenizer: TokenizerInit | null;
  /** Tokens of each message's framing; the model's when absent, else 0 (not for a host's counter, which counts them). */
  entryOverhead: number | null;
  /** Tokens that prime the reply; the model's when absent, else 0 (likewise). */
  replyOverhead: number | null;
  /** Which messages to keep (in JSON, `last` when left out). */
  strategy: TrimStrategy;
  /** With `last`, the system message that leads the chat is kept whatever else is. */
  includeSystem: boolean;
  /** With `last`, the kept messages begin with one of these roles (LangChain's `start_on`; none: any). */
  startOn: Role[];
  /** The kept messages end with one of these roles (LangChain's `end_on`; none: any). */
  endOn: Role[];
  /** Whether the next message that does not fit whole is cut to the room left (the newest end of it with `last`, the start with `first`): whole blocks of a list content first, then its text split (never a message of a tool call and its results). */
  allowPartial: boolean;
  /** How a text is split for `allow-partial` (in JSON, `lines`). */
  split: TextSplit;
}

/** A message cut to fit (`allow-partial`). (as the package gives it) */
export interface Partial {
  /** Its index in the chat's messages. */
  message: number;
  /** The blocks of its list content it keeps: the first, and how many. None where its text was cut instead. */
  blocks: BlockRange | null;
  /** The text it holds instead of its content: the splits kept, in order. None where whole blocks were kept. */
  text: string | null;
}

/** A message cut to fit (`allow-partial`). (as the package accepts it) */
export interface PartialInit {
  /** Its index in the chat's messages. */
  message: number;
  /** The blocks of its list content it keeps: the first, and how many. None where its text was cut instead. */
  blocks: BlockRangeInit | null;
  /** The text it holds instead of its content: the splits kept, in order. None where whole blocks were kept. */
  text: string | null;
}

/** A run of a content's blocks. (as the package gives it) */
export interface BlockRange {
  /** The first block's index. */
  first: number;
  /** How many. */
  count: number;
}

/** A run of a content's blocks. (as the package accepts it) */
export interface BlockRangeInit {
  /** The first block's index. */
  first: number;
  /** How many. */
  count: number;
}

/** A list of a trim's messages, counted as one request: the chat's messages at these indices and the cut one, each at its place in the chat's order. (as the package gives it) */
export interface MessageList {
  /** The indices of the messages given whole, ascending. */
  messages: number[];
  /** A message cut to fit, at its index's place. */
  cut: Partial | null;
}

/** A list of a trim's messages, counted as one request: the chat's messages at these indices and the cut one, each at its place in the chat's order. (as the package accepts it) */
export interface MessageListInit {
  /** The indices of the messages given whole, ascending. */
  messages: number[];
  /** A message cut to fit, at its index's place. */
  cut: PartialInit | null;
}

/** A text split into the pieces a cut message may keep. (as the package gives it) */
export interface TextPieces {
  /** The pieces, in order. */
  pieces: string[];
}

/** A text split into the pieces a cut message may keep. (as the package accepts it) */
export interface TextPiecesInit {
  /** The pieces, in order. */
  pieces: string[];
}

/** What `trim` kept. (as the package gives it) */
export interface Trimmed {
  /** The indices of the chat's messages kept, in order (a cut one included). */
  kept: number[];
  /** The message cut to fit, if one was. */
  partial: Partial | null;
  /** The kept messages as JSON text, a list in the chat's shape, each as given but the cut one. */
  messages: string;
  /** The kept messages as their request counts: the tokens checked against `max-tokens`. */
  tokens: number;
}

/** What `trim` kept. (as the package accepts it) */
export interface TrimmedInit {
  /** The indices of the chat's messages kept, in order (a cut one included). */
  kept: number[];
  /** The message cut to fit, if one was. */
  partial: PartialInit | null;
  /** The kept messages as JSON text, a list in the chat's shape, each as given but the cut one. */
  messages: string;
  /** The kept messages as their request counts: the tokens checked against `max-tokens`. */
  tokens: number;
}

/** What to send: a pack given back in the shape its chat came in. (as the package gives it) */
export interface ChatRequest {
  /** The shape, the chat's. */
  shape: ChatShape;
  /** JSON text of the request's body but the model and its options: the system text (L0, in the shape's place for it), the kept messages in the pack's layout, each the caller's own unchanged but for a cache hint, and the other context as a message of the pack's. With the provider's cache hints: Anthropic's `cache_control` at the prefixes the next turn repeats (see `cache-prefix`, at most 4 breakpoints in all), OpenAI's `prompt_cache_key` (the pack's `cache-key`). */
  body: string;
  /** For each message of the body's list (`messages`, `input`, `contents`), the index in the chat's messages of the one it is, or none for a message the pack made. */
  sources: (number | null)[];
}

/** What to send: a pack given back in the shape its chat came in. (as the package accepts it) */
export interface ChatRequestInit {
  /** The shape, the chat's. */
  shape: ChatShape;
  /** JSON text of the request's body but the model and its options: the system text (L0, in the shape's place for it), the kept messages in the pack's layout, each the caller's own unchanged but for a cache hint, and the other context as a message of the pack's. With the provider's cache hints: Anthropic's `cache_control` at the prefixes the next turn repeats (see `cache-prefix`, at most 4 breakpoints in all), OpenAI's `prompt_cache_key` (the pack's `cache-key`). */
  body: string;
  /** For each message of the body's list (`messages`, `input`, `contents`), the index in the chat's messages of the one it is, or none for a message the pack made. */
  sources: (number | null)[];
}

/** How a chat was read and charged. (as the package gives it) */
export interface ChatReport {
  /** The shape it came in. */
  shape: ChatShape;
  /** For each turn of the conversation (`turn-N`), the index in the chat's messages of its first message. */
  turns: number[];
  /** Where a charge is an upper bound rather than exact, each naming its place and why (`messages[3].content[1]: an image given by URL, charged the most it can cost`). */
  bounded: string[];
}

/** How a chat was read and charged. (as the package accepts it) */
export interface ChatReportInit {
  /** The shape it came in. */
  shape: ChatShape;
  /** For each turn of the conversation (`turn-N`), the index in the chat's messages of its first message. */
  turns: number[];
  /** Where a charge is an upper bound rather than exact, each naming its place and why (`messages[3].content[1]: an image given by URL, charged the most it can cost`). */
  bounded: string[];
}

/** A conversation compacted: what a pack returns for the next turn's request to pass back, so the summary's bytes stay as they are until the conversation is compacted again (see `plan.compact-share`). (as the package gives it) */
export interface Compaction {
  /** The summary of the conversation's first `turns` turns: sent as a system turn of its own in the place of the last of them. */
  summary: string;
  /** How many of the conversation's first turns the summary stands for (0: none; never inside a tool call's run of turns). */
  turns: number;
  /** The tool results before this turn are sent as a placeholder, their calls as they were. */
  cleared: number;
  /** Hex SHA-256 of the turns it stands for and clears (the first `max(turns, cleared)`), each turn's role, tool-call id, attached tokens and content written as a cache prefix writes a message: passed back with another conversation, or with turns left out at its start, it is refused. */
  hash: string;
}

/** A conversation compacted: what a pack returns for the next turn's request to pass back, so the summary's bytes stay as they are until the conversation is compacted again (see `plan.compact-share`). (as the package accepts it) */
export interface CompactionInit {
  /** The summary of the conversation's first `turns` turns: sent as a system turn of its own in the place of the last of them. */
  summary: string;
  /** How many of the conversation's first turns the summary stands for (0: none; never inside a tool call's run of turns). */
  turns: number;
  /** The tool results before this turn are sent as a placeholder, their calls as they were. */
  cleared: number;
  /** Hex SHA-256 of the turns it stands for and clears (the first `max(turns, cleared)`), each turn's role, tool-call id, attached tokens and content written as a cache prefix writes a message: passed back with another conversation, or with turns left out at its start, it is refused. */
  hash: string;
}

/** One entry of an assembled pack. (as the package gives it) */
export interface PackEntry {
  /** Id of the candidate it came from (matches its snapshot entry). */
  id: string;
  /** Layer. */
  layer: Layer;
  /** Section. */
  section: Section;
  /** The role the entry takes in a message list. */
  role: Role;
  /** The text exactly as charged and rendered. */
  text: string;
  /** Its tokens in the request's tokenizer (without the entry overhead). */
  tokens: number;
  /** Where it came from: the citation to show with it. */
  provenance: Provenance;
  /** How far it may be trusted. */
  trust: TrustTier;
}

/** One entry of an assembled pack. (as the package accepts it) */
export interface PackEntryInit {
  /** Id of the candidate it came from (matches its snapshot entry). */
  id: string;
  /** Layer. */
  layer: Layer;
  /** Section. */
  section: Section;
  /** The role the entry takes in a message list. */
  role: Role;
  /** The text exactly as charged and rendered. */
  text: string;
  /** Its tokens in the request's tokenizer (without the entry overhead). */
  tokens: number;
  /** Where it came from: the citation to show with it. */
  provenance: ProvenanceInit;
  /** How far it may be trusted. */
  trust: TrustTier;
}

/** A strategy that removed something from a pack. */
export type Strategy = "l0-immutable" | "keep-last" | "conversation-budget" | "evict-oldest" | "summarize" | "truncate";

/** What was done to fit the budget. (as the package gives it) */
export interface CompressionMetadata {
  /** Strategies applied, in the order they ran. */
  appliedStrategies: Strategy[];
  /** Layers that lost at least one entry, L0 to L2. */
  truncatedLayers: Layer[];
  /** How many candidates were left out. */
  entriesDropped: number;
}

/** What was done to fit the budget. (as the package accepts it) */
export interface CompressionMetadataInit {
  /** Strategies applied, in the order they ran. */
  appliedStrategies: Strategy[];
  /** Layers that lost at least one entry, L0 to L2. */
  truncatedLayers: Layer[];
  /** How many candidates were left out. */
  entriesDropped: number;
}

/** Why a candidate was taken or dropped: a closed set. (as the package gives it) */
export type Reason =
  | "mandatory"
  | "within-budget"
  | { keepLast: number }
  | { overBudget: Shortfall }
  | "evicted-oldest"
  | { toolPair: string }
  | "orphan-tool-result"
  | { duplicateOf: string }
  | { policyDenied: string }
  | "out-of-scope"
  | "no-provenance"
  | "section-not-allowed"
  | { summarized: string }
  | { stepCut: number }
  | { beyondLimit: number }
  | "assembly-failed"
  | "unreviewed"
  | "before-user-turn";

/** Why a candidate was taken or dropped: a closed set. (as the package accepts it) */
export type ReasonInit =
  | "mandatory"
  | "within-budget"
  | { keepLast: number }
  | { overBudget: ShortfallInit }
  | "evicted-oldest"
  | { toolPair: string }
  | "orphan-tool-result"
  | { duplicateOf: string }
  | { policyDenied: string }
  | "out-of-scope"
  | "no-provenance"
  | "section-not-allowed"
  | { summarized: string }
  | { stepCut: number }
  | { beyondLimit: number }
  | "assembly-failed"
  | "unreviewed"
  | "before-user-turn";

/** The numbers behind an over-budget drop. (as the package gives it) */
export interface Shortfall {
  /** Tokens the item needed, overhead included (and, for an older turn, every newer one left out): exact when the entry's tokens were counted exactly, otherwise the fewest it could need, since counting stops once an item cannot fit. The true sum, which an overhead near the u32 limit can take past it. */
  needed: number;
  /** Tokens that remained: for a text the policy reviewed, in the finished pack (room freed late was offered to it and it did not fit); for one it never saw, when the fill considered it. */
  remaining: number;
}

/** The numbers behind an over-budget drop. (as the package accepts it) */
export interface ShortfallInit {
  /** Tokens the item needed, overhead included (and, for an older turn, every newer one left out): exact when the entry's tokens were counted exactly, otherwise the fewest it could need, since counting stops once an item cannot fit. The true sum, which an overhead near the u32 limit can take past it. */
  needed: number;
  /** Tokens that remained: for a text the policy reviewed, in the finished pack (room freed late was offered to it and it did not fit); for one it never saw, when the fill considered it. */
  remaining: number;
}

/** One condition of an assembly's outcome. A status is a list of them: `complete` alone, or every one of `degraded`, `truncated` and `failed` that holds, in that order (a source may fail and a section be truncated in one assembly). */
export type SnapshotStatus = "complete" | "degraded" | "truncated" | "failed";

/** The record of one candidate in a snapshot. (as the package gives it) */
export interface SnapshotEntry {
  /** Candidate id. */
  id: string;
  /** Layer. */
  layer: Layer;
  /** Section. */
  section: Section;
  /** What produced it. */
  origin: Origin;
  /** Where it came from; absent only for a no-provenance drop. */
  provenance: Provenance | null;
  /** How far it may be trusted. */
  trust: TrustTier;
  /** The score it was ranked by, if any. */
  score: number | null;
  /** Its tokens in the request's tokenizer (without the entry overhead), as `counted` says. */
  tokens: number;
  /** How far its tokens were counted. */
  counted: Counted;
  /** Whether it is in the pack. */
  included: boolean;
  /** Why it was taken or dropped. */
  reason: Reason;
  /** Whether its text was summarised or truncated. */
  compressed: boolean;
  /** Whether the policy replaced its text. */
  redacted: boolean;
  /** Set when the entry stands for a run of the request's own candidates; its other fields are then the run's first member's. */
  run: EntryRun | null;
}

/** The record of one candidate in a snapshot. (as the package accepts it) */
export interface SnapshotEntryInit {
  /** Candidate id. */
  id: string;
  /** Layer. */
  layer: Layer;
  /** Section. */
  section: Section;
  /** What produced it. */
  origin: Origin;
  /** Where it came from; absent only for a no-provenance drop. */
  provenance?: ProvenanceInit | null;
  /** How far it may be trusted. */
  trust: TrustTier;
  /** The score it was ranked by, if any. */
  score?: number | null;
  /** Its tokens in the request's tokenizer (without the entry overhead), as `counted` says. */
  tokens: number;
  /** How far its tokens were counted. */
  counted: Counted;
  /** Whether it is in the pack. */
  included: boolean;
  /** Why it was taken or dropped. */
  reason: ReasonInit;
  /** Whether its text was summarised or truncated. */
  compressed: boolean;
  /** Whether the policy replaced its text. */
  redacted: boolean;
  /** Set when the entry stands for a run of the request's own candidates; its other fields are then the run's first member's. */
  run?: EntryRunInit | null;
}

/** A run of consecutive conversation turns or stage summaries dropped for the same reason without being counted, recorded as one entry (a long history trimmed is thousands of turns never looked at). The entry's `id` is the first member's and `last-id` the last one's; the ids between are consecutive ("turn-12" … "turn-9911"). Every member has the entry's layer, section, origin and reason, is uncounted (`tokens` 0) and is not included; its provenance and trust follow from the request as the first's do ("conversation[i]", trust by role). For an over-budget run the shortfall is the first member's: every older one needs more. Metrics count every member; `diff-snapshots` compares members. (as the package gives it) */
export interface EntryRun {
  /** The last member's id. */
  lastId: string;
  /** How many candidates the entry stands for, first and last included (at least 2). */
  count: number;
}

/** A run of consecutive conversation turns or stage summaries dropped for the same reason without being counted, recorded as one entry (a long history trimmed is thousands of turns never looked at). The entry's `id` is the first member's and `last-id` the last one's; the ids between are consecutive ("turn-12" … "turn-9911"). Every member has the entry's layer, section, origin and reason, is uncounted (`tokens` 0) and is not included; its provenance and trust follow from the request as the first's do ("conversation[i]", trust by role). For an over-budget run the shortfall is the first member's: every older one needs more. Metrics count every member; `diff-snapshots` compares members. (as the package accepts it) */
export interface EntryRunInit {
  /** The last member's id. */
  lastId: string;
  /** How many candidates the entry stands for, first and last included (at least 2). */
  count: number;
}

/** How far a candidate's tokens were counted: counting stops as soon as the decision is clear, so only what decides something is counted. */
export type Counted = "exact" | "over" | "uncounted";

/** What produced a candidate. */
export type Origin = "request" | "retrieval" | "memory" | "graph" | "repository" | "summary";

/** One text to summarise. (as the package gives it) */
export interface SummaryRequest {
  /** The section the summary is for. */
  section: Section;
  /** The text. */
  text: string;
  /** Most tokens the summary may have. */
  targetTokens: number;
}

/** One text to summarise. (as the package accepts it) */
export interface SummaryRequestInit {
  /** The section the summary is for. */
  section: Section;
  /** The text. */
  text: string;
  /** Most tokens the summary may have. */
  targetTokens: number;
}

/** How one host source fared in an assembly. (as the package gives it) */
export interface SourceCall {
  /** The capability, e.g. "sources.retrieve". */
  capability: string;
  /** What came of it. */
  outcome: SourceOutcome;
}

/** How one host source fared in an assembly. (as the package accepts it) */
export interface SourceCallInit {
  /** The capability, e.g. "sources.retrieve". */
  capability: string;
  /** What came of it. */
  outcome: SourceOutcomeInit;
}

/** What came of a source call. (as the package gives it) */
export type SourceOutcome =
  | { answered: number }
  | { failed: string }
  | { skipped: string };

/** What came of a source call. (as the package accepts it) */
export type SourceOutcomeInit =
  | { answered: number }
  | { failed: string }
  | { skipped: string };

/** What compression did to one optional section still over its share once the unused shares had flowed. (as the package gives it) */
export interface SectionCompression {
  /** The section. */
  section: Section;
  /** The tokens a summary of its leftovers could have: the room it kept (the unused part of its share; for the first such section, with what the flow left), less the entry overhead and the summary's citation or fence. */
  targetTokens: number;
  /** What came of it. */
  outcome: CompressionOutcome;
}

/** What compression did to one optional section still over its share once the unused shares had flowed. (as the package accepts it) */
export interface SectionCompressionInit {
  /** The section. */
  section: Section;
  /** The tokens a summary of its leftovers could have: the room it kept (the unused part of its share; for the first such section, with what the flow left), less the entry overhead and the summary's citation or fence. */
  targetTokens: number;
  /** What came of it. */
  outcome: CompressionOutcomeInit;
}

/** What came of compressing a section. (as the package gives it) */
export type CompressionOutcome =
  | { summarized: number }
  | { cut: string }
  | { skipped: string }
  | { whole: string };

/** What came of compressing a section. (as the package accepts it) */
export type CompressionOutcomeInit =
  | { summarized: number }
  | { cut: string }
  | { skipped: string }
  | { whole: string };

/** How host texts and turns were written into the rendered context: whether the fences' nonce is keyed, and which entries lost characters or had a structure defused (see the book's threat model). (as the package gives it) */
export interface FenceReport {
  /** Whether the fences' nonce is a keyed MAC: the builder was given a `fence-key`. Unkeyed, it is a hash of the request's context, which a store that knows that context can compute. */
  keyed: boolean;
  /** Ids of the included entries whose text had control characters (other than tab, line feed and carriage return) or tag characters removed, in render order. */
  stripped: string[];
  /** Ids of the included entries in whose text a spelling of one of the rendered context's structures (a fence marker, a role header, a citation head, a chat format's marker) had its opening bracket replaced by `(`, or a control token of the request's tokenizer neutralised, in render order. */
  defused: string[];
  /** The role of the message the other context (what is neither L0 nor a turn) is sent in: `user` where any of it is of unverified or untrusted origin, which never carries system authority; `system` otherwise; none where the pack has none. */
  contextRole: Role | null;
  /** How many lines of the flat text begin with the quote (`> `) the pack writes so that no byte of untrusted origin begins a line: every line of a fenced text, every line of a turn after its header. Each costs about a token, counted in the entry's tokens. */
  quotedLines: number;
}

/** How host texts and turns were written into the rendered context: whether the fences' nonce is keyed, and which entries lost characters or had a structure defused (see the book's threat model). (as the package accepts it) */
export interface FenceReportInit {
  /** Whether the fences' nonce is a keyed MAC: the builder was given a `fence-key`. Unkeyed, it is a hash of the request's context, which a store that knows that context can compute. */
  keyed: boolean;
  /** Ids of the included entries whose text had control characters (other than tab, line feed and carriage return) or tag characters removed, in render order. */
  stripped: string[];
  /** Ids of the included entries in whose text a spelling of one of the rendered context's structures (a fence marker, a role header, a citation head, a chat format's marker) had its opening bracket replaced by `(`, or a control token of the request's tokenizer neutralised, in render order. */
  defused: string[];
  /** The role of the message the other context (what is neither L0 nor a turn) is sent in: `user` where any of it is of unverified or untrusted origin, which never carries system authority; `system` otherwise; none where the pack has none. */
  contextRole?: Role | null;
  /** How many lines of the flat text begin with the quote (`> `) the pack writes so that no byte of untrusted origin begins a line: every line of a fenced text, every line of a turn after its header. Each costs about a token, counted in the entry's tokens. */
  quotedLines?: number;
}

/** The immutable record of one assembly: every candidate, once. (as the package gives it) */
export interface Snapshot {
  /** Content hash (hex SHA-256) of everything below and the pack. */
  id: string;
  /** Tenant, copied from the request. */
  tenantId: string | null;
  /** Project, copied from the request. */
  projectId: string | null;
  /** Run, copied from the request. */
  runId: string | null;
  /** Attempt, copied from the request. */
  attemptId: string | null;
  /** Scopes the attempt was assembled under. */
  scopes: string[];
  /** The tokenizer counts were made in. */
  tokenizer: Tokenizer;
  /** The model the request named, and what was taken from its profile (in JSON, left out when none). */
  model: ModelUse | null;
  /** The budget. */
  tokenBudget: number;
  /** Tokens the pack is charged: for a request that names its `form`, that form's tokens (`text-tokens` or `message-tokens`); otherwise every included entry's tokens and entry overhead, plus what rendering them together adds (the blank lines between entries, pieces that merge or split across a join) in whichever form adds more, never less than either. Never more than the budget. */
  tokensUsed: number;
  /** Tokens of the pack's flat `text`, counted whole. */
  textTokens: number;
  /** Tokens of the pack's `messages`: each message's content counted whole, plus the entry overhead once per message. */
  messageTokens: number;
  /** Tokens of the stable prefix (the L0 entries that lead the pack, rendered together), entry overhead included. */
  stablePrefixTokens: number;
  /** The prefixes of the pack's messages that the next turn's pack can repeat byte for byte, for a provider's prompt cache to serve: at each boundary, in order (see `cache-prefix`). None for a pack sent as text (`form: text`). */
  cachePrefixes: CachePrefix[];
  /** Hex SHA-256 of the rendered text's UTF-8 bytes: the reference under which a host stores the assembled content (content never in the row), and which it can check. */
  contentHash: string;
  /** Index revisions of the included items, sorted, each once. */
  indexRevisions: string[];
  /** Ids of the included memory items, in render order. */
  memoryItems: string[];
  /** Outcome: every condition that holds (see `snapshot-status`). */
  status: SnapshotStatus[];
  /** Why the assembly failed, when the status says `failed`. */
  failure: string | null;
  /** The builder profile that gathered the candidates. */
  profile: Profile;
  /** The plan the budget was shared by. */
  plan: Plan;
  /** What each host source was asked and how it answered: the sources in the profile's order, then each review round and the summariser in the order they were asked. */
  sourceCalls: SourceCall[];
  /** Each optional section still over its share once the unused shares had flowed, in priority order, and what compression did to it. */
  compressions: SectionCompression[];
  /** How host texts and turns were written into the rendered context. */
  fence: FenceReport;
  /** How the request's chat was read and charged (in JSON, left out when the request carried none). */
  chat: ChatReport | null;
  /** One entry per candidate, in render order (dropped ones where they would have stood); a run of turns or stage summaries dropped alike is one entry (see `entry-run`). */
  entries: SnapshotEntry[];
}

/** The immutable record of one assembly: every candidate, once. (as the package accepts it) */
export interface SnapshotInit {
  /** Content hash (hex SHA-256) of everything below and the pack. */
  id: string;
  /** Tenant, copied from the request. */
  tenantId?: string | null;
  /** Project, copied from the request. */
  projectId?: string | null;
  /** Run, copied from the request. */
  runId?: string | null;
  /** Attempt, copied from the request. */
  attemptId?: string | null;
  /** Scopes the attempt was assembled under. */
  scopes: string[];
  /** The tokenizer counts were made in. */
  tokenizer: TokenizerInit;
  /** The model the request named, and what was taken from its profile (in JSON, left out when none). */
  model?: ModelUseInit | null;
  /** The budget. */
  tokenBudget: number;
  /** Tokens the pack is charged: for a request that names its `form`, that form's tokens (`text-tokens` or `message-tokens`); otherwise every included entry's tokens and entry overhead, plus what rendering them together adds (the blank lines between entries, pieces that merge or split across a join) in whichever form adds more, never less than either. Never more than the budget. */
  tokensUsed: number;
  /** Tokens of the pack's flat `text`, counted whole. */
  textTokens: number;
  /** Tokens of the pack's `messages`: each message's content counted whole, plus the entry overhead once per message. */
  messageTokens: number;
  /** Tokens of the stable prefix (the L0 entries that lead the pack, rendered together), entry overhead included. */
  stablePrefixTokens: number;
  /** The prefixes of the pack's messages that the next turn's pack can repeat byte for byte, for a provider's prompt cache to serve: at each boundary, in order (see `cache-prefix`). None for a pack sent as text (`form: text`). */
  cachePrefixes: CachePrefixInit[];
  /** Hex SHA-256 of the rendered text's UTF-8 bytes: the reference under which a host stores the assembled content (content never in the row), and which it can check. */
  contentHash: string;
  /** Index revisions of the included items, sorted, each once. */
  indexRevisions: string[];
  /** Ids of the included memory items, in render order. */
  memoryItems: string[];
  /** Outcome: every condition that holds (see `snapshot-status`). */
  status: SnapshotStatus[];
  /** Why the assembly failed, when the status says `failed`. */
  failure?: string | null;
  /** The builder profile that gathered the candidates. */
  profile: ProfileInit;
  /** The plan the budget was shared by. */
  plan: PlanInit;
  /** What each host source was asked and how it answered: the sources in the profile's order, then each review round and the summariser in the order they were asked. */
  sourceCalls: SourceCallInit[];
  /** Each optional section still over its share once the unused shares had flowed, in priority order, and what compression did to it. */
  compressions: SectionCompressionInit[];
  /** How host texts and turns were written into the rendered context. */
  fence: FenceReportInit;
  /** How the request's chat was read and charged (in JSON, left out when the request carried none). */
  chat?: ChatReportInit | null;
  /** One entry per candidate, in render order (dropped ones where they would have stood); a run of turns or stage summaries dropped alike is one entry (see `entry-run`). */
  entries: SnapshotEntryInit[];
}

/** Where a prefix of a pack's messages ends. */
export type CacheBoundary = "stable" | "history" | "turn";

/** A prefix of a pack's messages, at one boundary. Two snapshots' prefixes of equal hash are byte-identical: a cache serves the longer turn the shorter one's tokens. (as the package gives it) */
export interface CachePrefix {
  /** Where it ends. */
  boundary: CacheBoundary;
  /** How many of the pack's messages it holds. */
  messages: number;
  /** Its tokens, as `message-tokens` counts them. */
  tokens: number;
  /** Hex SHA-256 of its messages in order, each written as four fields — its role (`system`, `user`, `assistant`, `tool`), its tool-call id, its attached tokens in decimal, its content —, each as its UTF-8 byte length in decimal, `:`, and its bytes (an absent field empty): a host hashes another pack's first messages alike to tell whether a cache serves them. */
  hash: string;
  /** Whether it reaches the fewest tokens the model's provider caches (`model-profile.cache-min-tokens`; 1,024 for a request that names no model): a cache breakpoint belongs here. */
  cacheable: boolean;
}

/** A prefix of a pack's messages, at one boundary. Two snapshots' prefixes of equal hash are byte-identical: a cache serves the longer turn the shorter one's tokens. (as the package accepts it) */
export interface CachePrefixInit {
  /** Where it ends. */
  boundary: CacheBoundary;
  /** How many of the pack's messages it holds. */
  messages: number;
  /** Its tokens, as `message-tokens` counts them. */
  tokens: number;
  /** Hex SHA-256 of its messages in order, each written as four fields — its role (`system`, `user`, `assistant`, `tool`), its tool-call id, its attached tokens in decimal, its content —, each as its UTF-8 byte length in decimal, `:`, and its bytes (an absent field empty): a host hashes another pack's first messages alike to tell whether a cache serves them. */
  hash: string;
  /** Whether it reaches the fewest tokens the model's provider caches (`model-profile.cache-min-tokens`; 1,024 for a request that names no model): a cache breakpoint belongs here. */
  cacheable: boolean;
}

/** An assembled context. (as the package gives it) */
export interface ContextPack {
  /** Deterministic id: "<session-id or unknown>-router-pack". */
  id: string;
  /** Session, copied from the request. */
  sessionId: string | null;
  /** A key that keeps a session's requests on the provider's cache (OpenAI's `prompt_cache_key`): a hash of the tenant and the session, or of the stable prefix where the request names no session; none where it has neither. */
  cacheKey: string | null;
  /** Trace, copied from the request. */
  traceId: string;
  /** The current stage, if the workflow names one. */
  stageId: string | null;
  /** Included entries in render order: L0, then L2, then L1. */
  entries: PackEntry[];
  /** The entries' texts joined by blank lines. */
  text: string;
  /** The same context as chat messages, in the request's layout: L0 as the first system message (the stable prefix), the other context as a second, and the kept conversation turns with their roles and tool-call ids. */
  messages: Message[];
  /** Tokens used, entry overhead included; never above the budget. */
  budgetUsed: number;
  /** The budget. */
  budgetLimit: number;
  /** The conversation's compaction, to pass back with the next turn's request: the one the request passed, or a newer one. None where the plan does not compact and the request passed none. */
  compaction: Compaction | null;
  /** The request to send, in the shape of the request's chat; none where the request carried no chat, or asked for the flat text (`form: text`), which is then the pack's `text` alone. */
  chat: ChatRequest | null;
  /** What was done to fit. */
  compression: CompressionMetadata;
  /** Why every candidate was taken or dropped. */
  snapshot: Snapshot;
  /** The context-assembled event, for the host to publish. */
  event: ContextAssembled;
  /** Metrics of this assembly, for the host to record. */
  metrics: Metrics;
}

/** An assembled context. (as the package accepts it) */
export interface ContextPackInit {
  /** Deterministic id: "<session-id or unknown>-router-pack". */
  id: string;
  /** Session, copied from the request. */
  sessionId?: string | null;
  /** A key that keeps a session's requests on the provider's cache (OpenAI's `prompt_cache_key`): a hash of the tenant and the session, or of the stable prefix where the request names no session; none where it has neither. */
  cacheKey?: string | null;
  /** Trace, copied from the request. */
  traceId: string;
  /** The current stage, if the workflow names one. */
  stageId?: string | null;
  /** Included entries in render order: L0, then L2, then L1. */
  entries: PackEntryInit[];
  /** The entries' texts joined by blank lines. */
  text: string;
  /** The same context as chat messages, in the request's layout: L0 as the first system message (the stable prefix), the other context as a second, and the kept conversation turns with their roles and tool-call ids. */
  messages: MessageInit[];
  /** Tokens used, entry overhead included; never above the budget. */
  budgetUsed: number;
  /** The budget. */
  budgetLimit: number;
  /** The conversation's compaction, to pass back with the next turn's request: the one the request passed, or a newer one. None where the plan does not compact and the request passed none. */
  compaction?: CompactionInit | null;
  /** The request to send, in the shape of the request's chat; none where the request carried no chat, or asked for the flat text (`form: text`), which is then the pack's `text` alone. */
  chat?: ChatRequestInit | null;
  /** What was done to fit. */
  compression: CompressionMetadataInit;
  /** Why every candidate was taken or dropped. */
  snapshot: SnapshotInit;
  /** The context-assembled event, for the host to publish. */
  event: ContextAssembledInit;
  /** Metrics of this assembly, for the host to record. */
  metrics: MetricsInit;
}

/** One chat message. (as the package gives it) */
export interface Message {
  /** Who speaks. */
  role: Role;
  /** What is said. */
  content: string;
  /** The tool call a turn makes or answers. */
  toolCallId: string | null;
  /** Tokens the turn sends beside its text (its images, which the pack holds no copy of), charged with it: send them with it. */
  attachedTokens: number | null;
}

/** One chat message. (as the package accepts it) */
export interface MessageInit {
  /** Who speaks. */
  role: Role;
  /** What is said. */
  content: string;
  /** The tool call a turn makes or answers. */
  toolCallId?: string | null;
  /** Tokens the turn sends beside its text (its images, which the pack holds no copy of), charged with it: send them with it. */
  attachedTokens?: number | null;
}

/** The context-assembled event: what a host publishes once an assembly's snapshot is stored. (as the package gives it) */
export interface ContextAssembled {
  /** The snapshot's id. */
  contextSnapshotId: string;
  /** Tenant. */
  tenantId: string | null;
  /** Run. */
  runId: string | null;
  /** Attempt. */
  attemptId: string | null;
  /** Outcome. */
  status: SnapshotStatus[];
  /** Tokens used. */
  tokensUsed: number;
  /** The budget. */
  tokenBudget: number;
}

/** The context-assembled event: what a host publishes once an assembly's snapshot is stored. (as the package accepts it) */
export interface ContextAssembledInit {
  /** The snapshot's id. */
  contextSnapshotId: string;
  /** Tenant. */
  tenantId?: string | null;
  /** Run. */
  runId?: string | null;
  /** Attempt. */
  attemptId?: string | null;
  /** Outcome. */
  status: SnapshotStatus[];
  /** Tokens used. */
  tokensUsed: number;
  /** The budget. */
  tokenBudget: number;
}

/** Metrics of one assembly. (as the package gives it) */
export interface Metrics {
  /** Tokens included per section (entry overhead included), sections with none left out, in section order. */
  tokensPerSection: SectionTokens[];
  /** Dropped candidates per reason, by the reason's name, sorted. */
  droppedByReason: ReasonCount[];
}

/** Metrics of one assembly. (as the package accepts it) */
export interface MetricsInit {
  /** Tokens included per section (entry overhead included), sections with none left out, in section order. */
  tokensPerSection: SectionTokensInit[];
  /** Dropped candidates per reason, by the reason's name, sorted. */
  droppedByReason: ReasonCountInit[];
}

/** Tokens of one section. (as the package gives it) */
export interface SectionTokens {
  /** Section. */
  section: Section;
  /** Tokens. */
  tokens: number;
}

/** Tokens of one section. (as the package accepts it) */
export interface SectionTokensInit {
  /** Section. */
  section: Section;
  /** Tokens. */
  tokens: number;
}

/** How many candidates were dropped for one reason. (as the package gives it) */
export interface ReasonCount {
  /** The reason's name, e.g. "over-budget". */
  reason: string;
  /** How many. */
  count: number;
}

/** How many candidates were dropped for one reason. (as the package accepts it) */
export interface ReasonCountInit {
  /** The reason's name, e.g. "over-budget". */
  reason: string;
  /** How many. */
  count: number;
}

/** What happened to one candidate between two snapshots. */
export type ChangeKind = "entered" | "left" | "moved" | "retokened" | "reason-changed" | "appeared-dropped" | "vanished-dropped";

/** A candidate's state in one snapshot. (as the package gives it) */
export interface EntryState {
  /** Section. */
  section: Section;
  /** Whether it was included. */
  included: boolean;
  /** Why. */
  reason: Reason;
  /** Its tokens. */
  tokens: number;
  /** Its place among the included entries, from 0. */
  position: number | null;
}

/** A candidate's state in one snapshot. (as the package accepts it) */
export interface EntryStateInit {
  /** Section. */
  section: Section;
  /** Whether it was included. */
  included: boolean;
  /** Why. */
  reason: ReasonInit;
  /** Its tokens. */
  tokens: number;
  /** Its place among the included entries, from 0. */
  position?: number | null;
}

/** One changed candidate. (as the package gives it) */
export interface Change {
  /** Candidate id. */
  id: string;
  /** What produced it. */
  origin: Origin;
  /** What happened. */
  kind: ChangeKind;
  /** Before, if it was a candidate then. */
  before: EntryState | null;
  /** After, if it is a candidate now. */
  after: EntryState | null;
}

/** One changed candidate. (as the package accepts it) */
export interface ChangeInit {
  /** Candidate id. */
  id: string;
  /** What produced it. */
  origin: Origin;
  /** What happened. */
  kind: ChangeKind;
  /** Before, if it was a candidate then. */
  before?: EntryStateInit | null;
  /** After, if it is a candidate now. */
  after?: EntryStateInit | null;
}

/** What changed between two snapshots, and why. (as the package gives it) */
export interface SnapshotDiff {
  /** The earlier snapshot's id. */
  beforeId: string;
  /** The later snapshot's id. */
  afterId: string;
  /** Status before. */
  statusBefore: SnapshotStatus[];
  /** Status after. */
  statusAfter: SnapshotStatus[];
  /** Tokens used before. */
  tokensBefore: number;
  /** Tokens used after. */
  tokensAfter: number;
  /** Changed candidates: the later snapshot's order, then those only in the earlier one. */
  changes: Change[];
  /** Candidates whose state did not change. */
  unchanged: number;
}

/** What changed between two snapshots, and why. (as the package accepts it) */
export interface SnapshotDiffInit {
  /** The earlier snapshot's id. */
  beforeId: string;
  /** The later snapshot's id. */
  afterId: string;
  /** Status before. */
  statusBefore: SnapshotStatus[];
  /** Status after. */
  statusAfter: SnapshotStatus[];
  /** Tokens used before. */
  tokensBefore: number;
  /** Tokens used after. */
  tokensAfter: number;
  /** Changed candidates: the later snapshot's order, then those only in the earlier one. */
  changes: ChangeInit[];
  /** Candidates whose state did not change. */
  unchanged: number;
}

/** Why an assembly or a configuration was refused. (as the package gives it) */
export type CtxpackError =
  | { invalidField: FieldError }
  | { mandatoryOverBudget: MandatoryShortfall }
  | { tokenizerUnavailable: string }
  | { hostFailed: HostError }
  | { stepMismatch: string };

/** Why an assembly or a configuration was refused. (as the package accepts it) */
export type CtxpackErrorInit =
  | { invalidField: FieldErrorInit }
  | { mandatoryOverBudget: MandatoryShortfallInit }
  | { tokenizerUnavailable: string }
  | { hostFailed: HostErrorInit }
  | { stepMismatch: string };

/** An assembly that gave no pack: why, and — when it had begun (L0 over the budget, the policy failing) — its `failed` snapshot, with every candidate known by then, for the host to store. A request refused as invalid has no snapshot. (as the package gives it) */
export interface AssemblyFailure {
  /** Why. */
  error: CtxpackError;
  /** The failed snapshot, if the assembly had begun. */
  snapshot: Snapshot | null;
}

/** An assembly that gave no pack: why, and — when it had begun (L0 over the budget, the policy failing) — its `failed` snapshot, with every candidate known by then, for the host to store. A request refused as invalid has no snapshot. (as the package accepts it) */
export interface AssemblyFailureInit {
  /** Why. */
  error: CtxpackErrorInit;
  /** The failed snapshot, if the assembly had begun. */
  snapshot: SnapshotInit | null;
}

/** An invalid field. (as the package gives it) */
export interface FieldError {
  /** Path of the field, e.g. "request.conversation[3].tool-call-id". */
  field: string;
  /** What is wrong with it. */
  message: string;
}

/** An invalid field. (as the package accepts it) */
export interface FieldErrorInit {
  /** Path of the field, e.g. "request.conversation[3].tool-call-id". */
  field: string;
  /** What is wrong with it. */
  message: string;
}

/** The numbers behind a mandatory-over-budget failure. (as the package gives it) */
export interface MandatoryShortfall {
  /** Tokens L0 needs rendered, entry overhead included: the true sum, which may pass any budget. */
  mandatoryTokens: number;
  /** The budget. */
  budget: number;
}

/** The numbers behind a mandatory-over-budget failure. (as the package accepts it) */
export interface MandatoryShortfallInit {
  /** Tokens L0 needs rendered, entry overhead included: the true sum, which may pass any budget. */
  mandatoryTokens: number;
  /** The budget. */
  budget: number;
}

/** How a host import failed. (as the package gives it) */
export interface HostError {
  /** The host capability that failed, e.g. "sources.retrieve". */
  capability: string;
  /** What the host said. */
  message: string;
}

/** How a host import failed. (as the package accepts it) */
export interface HostErrorInit {
  /** The host capability that failed, e.g. "sources.retrieve". */
  capability: string;
  /** What the host said. */
  message: string;
}

/** What a builder is constructed from, once per instance. (as the package gives it) */
export interface BuilderConfig {
  /** Tokenizers the builder must have: checked at `create`, so a component built without one refuses the builder at once. (Their tables are static data; there is nothing left to build ahead.) */
  preload: Tokenizer[];
  /** Tokenizer files, each read once here; a request counts with one by naming it. A file that cannot be read refuses the builder. */
  tokenizers: TokenizerFile[];
  /** Model profiles added to the built-in ones (one of the same name replaces it); each is checked here. */
  models: ModelProfile[];
  /** What the builder gathers from the host. */
  profile: Profile;
  /** Estimated Jaccard similarity (of three-word shingles) at which a host candidate is a near-duplicate of a higher-ranked one, in (0, 1]; 1 keeps exact duplicate detection only. 0.8 catches a few words edited in a 300-token chunk. */
  nearDuplicateThreshold: number;
  /** Terms added to the fused rank score; all zero ranks by reciprocal-rank fusion alone. */
  ranking: Ranking;
  /** Budget defaults, the model window and the sections' shares. */
  plan: Plan;
  /** Most token counts the builder keeps between assemblies (keyed by a hash of the text and the tokenizer), so a conversation re-assembled every turn recounts only its new text; 0 keeps none. */
  countCacheEntries: number;
  /** A secret of at least 16 bytes: the fences' nonce is then a keyed MAC (HMAC-SHA-256) of the request's context, so no store can name the closing marker of a fence it writes into. Without one the nonce is a hash of that context, and the snapshot says the fence is unkeyed. The same key and context give the same nonce, so packs stay deterministic and prompt caches hit. */
  fenceKey: string | null;
}

/** What a builder is constructed from, once per instance. (as the package accepts it) */
export interface BuilderConfigInit {
  /** Tokenizers the builder must have: checked at `create`, so a component built without one refuses the builder at once. (Their tables are static data; there is nothing left to build ahead.) */
  preload?: TokenizerInit[];
  /** Tokenizer files, each read once here; a request counts with one by naming it. A file that cannot be read refuses the builder. */
  tokenizers?: TokenizerFileInit[];
  /** Model profiles added to the built-in ones (one of the same name replaces it); each is checked here. */
  models?: ModelProfileInit[];
  /** What the builder gathers from the host. */
  profile?: ProfileInit;
  /** Estimated Jaccard similarity (of three-word shingles) at which a host candidate is a near-duplicate of a higher-ranked one, in (0, 1]; 1 keeps exact duplicate detection only. 0.8 catches a few words edited in a 300-token chunk. */
  nearDuplicateThreshold?: number;
  /** Terms added to the fused rank score; all zero ranks by reciprocal-rank fusion alone. */
  ranking?: RankingInit;
  /** Budget defaults, the model window and the sections' shares. */
  plan?: PlanInit;
  /** Most token counts the builder keeps between assemblies (keyed by a hash of the text and the tokenizer), so a conversation re-assembled every turn recounts only its new text; 0 keeps none. */
  countCacheEntries?: number;
  /** A secret of at least 16 bytes: the fences' nonce is then a keyed MAC (HMAC-SHA-256) of the request's context, so no store can name the closing marker of a fence it writes into. Without one the nonce is a hash of that context, and the snapshot says the fence is unkeyed. The same key and context give the same nonce, so packs stay deterministic and prompt caches hit. */
  fenceKey?: string | null;
}

/** The plan of an assembly: the budget, the model window, and how the budget is shared among sections. L0 is charged first and whole; each optional section then fills up to its share, and what sections leave unused flows to the others in priority order: conversation, repository state, relevant knowledge, graph neighbours, episodic memory, current diff, tool results, supporting context, stage summaries. (as the package gives it) */
export interface Plan {
  /** The budget of a request that names none (24000 by default). */
  defaultBudget: number;
  /** The model's context window; a budget may not exceed it less the safety margin. */
  modelWindow: number | null;
  /** Share of the window kept free, in [0, 1). */
  safetyMargin: number;
  /** Each section's share of the budget, in [0, 1], summing to at most 1; a section left out is filled only from unused shares. */
  shares: SectionShare[];
  /** Whether an optional section over its share is summarised (or, failing that, truncated) into its unused share instead of cut. */
  compress: boolean;
  /** The fewest tokens a summary must be able to have for the summariser to be asked (32 by default): a section whose room, less the entry overhead and the summary's citation or fence, is smaller is not compressed, and the snapshot's `compressions` says so. With a small budget the default keeps the summariser from being called; set it lower to summarise into little room. */
  minSummaryTokens: number;
  /** The first kept conversation turn (and stage summary) moves in steps of this many, so the rendered text stays byte-stable across the turns of a growing conversation and prompt caches hit; 1 moves it by one. */
  cutStep: number;
  /** In a cache-first layout, the conversation gives way this share of the budget at a time: its first kept turn is the first it may begin with (a unit's first; the user's, where it must begin with the user) once the conversation before it has filled a whole number of such steps (its text taken at 4 bytes a token, so a turn's steps never change as the conversation grows, and nothing it let go is counted). Where no step of that size begins within what fits, steps of its half, then its quarter; where none does, the oldest turn that fits begins it. 0.55 by default; 0 gives way turn by turn. */
  cutShare: number;
  /** Compaction: when the conversation since its summary (its text taken at 4 bytes a token) passes this share of the budget, its oldest tool results are cleared, and if it is still past, its oldest turns are summarised by the host's summariser, until about half that share is left. The pack's `compaction` says what was, for the next request to pass back: until the next compaction its bytes stay as they are. 0 (the default) never compacts. */
  compactShare: number;
  /** The most tokens of the conversation's summary (512 by default); 0 only clears tool results. */
  compactTokens: number;
  /** Tool results are cleared only when that frees at least this many tokens at once, the newest 3 kept, each result's call kept with it; 0 (the default) clears none. */
  clearAtLeast: number;
}

/** The plan of an assembly: the budget, the model window, and how the budget is shared among sections. L0 is charged first and whole; each optional section then fills up to its share, and what sections leave unused flows to the others in priority order: conversation, repository state, relevant knowledge, graph neighbours, episodic memory, current diff, tool results, supporting context, stage summaries. (as the package accepts it) */
export interface PlanInit {
  /** The budget of a request that names none (24000 by default). */
  defaultBudget?: number;
  /** The model's context window; a budget may not exceed it less the safety margin. */
  modelWindow?: number | null;
  /** Share of the window kept free, in [0, 1). */
  safetyMargin?: number;
  /** Each section's share of the budget, in [0, 1], summing to at most 1; a section left out is filled only from unused shares. */
  shares?: SectionShareInit[];
  /** Whether an optional section over its share is summarised (or, failing that, truncated) into its unused share instead of cut. */
  compress?: boolean;
  /** The fewest tokens a summary must be able to have for the summariser to be asked (32 by default): a section whose room, less the entry overhead and the summary's citation or fence, is smaller is not compressed, and the snapshot's `compressions` says so. With a small budget the default keeps the summariser from being called; set it lower to summarise into little room. */
  minSummaryTokens?: number;
  /** The first kept conversation turn (and stage summary) moves in steps of this many, so the rendered text stays byte-stable across the turns of a growing conversation and prompt caches hit; 1 moves it by one. */
  cutStep?: number;
  /** In a cache-first layout, the conversation gives way this share of the budget at a time: its first kept turn is the first it may begin with (a unit's first; the user's, where it must begin with the user) once the conversation before it has filled a whole number of such steps (its text taken at 4 bytes a token, so a turn's steps never change as the conversation grows, and nothing it let go is counted). Where no step of that size begins within what fits, steps of its half, then its quarter; where none does, the oldest turn that fits begins it. 0.55 by default; 0 gives way turn by turn. */
  cutShare?: number;
  /** Compaction: when the conversation since its summary (its text taken at 4 bytes a token) passes this share of the budget, its oldest tool results are cleared, and if it is still past, its oldest turns are summarised by the host's summariser, until about half that share is left. The pack's `compaction` says what was, for the next request to pass back: until the next compaction its bytes stay as they are. 0 (the default) never compacts. */
  compactShare?: number;
  /** The most tokens of the conversation's summary (512 by default); 0 only clears tool results. */
  compactTokens?: number;
  /** Tool results are cleared only when that frees at least this many tokens at once, the newest 3 kept, each result's call kept with it; 0 (the default) clears none. */
  clearAtLeast?: number;
}

/** One section's share of the budget. (as the package gives it) */
export interface SectionShare {
  /** The section. */
  section: Section;
  /** Its share, in [0, 1]. */
  share: number;
}

/** One section's share of the budget. (as the package accepts it) */
export interface SectionShareInit {
  /** The section. */
  section: Section;
  /** Its share, in [0, 1]. */
  share: number;
}

/** Terms of the fused score besides reciprocal-rank fusion (which adds at most 1/61 per source, so weights of about 0.01 already reorder). (as the package gives it) */
export interface Ranking {
  /** Added for a system candidate. */
  trustSystem: number;
  /** Added for a trusted candidate. */
  trustTrusted: number;
  /** Added for an unverified candidate. */
  trustUnverified: number;
  /** Added for an untrusted candidate. */
  trustUntrusted: number;
  /** Times the recency: 1 for the newest sequence, 0 for the oldest, 0 without one. */
  recency: number;
}

/** Terms of the fused score besides reciprocal-rank fusion (which adds at most 1/61 per source, so weights of about 0.01 already reorder). (as the package accepts it) */
export interface RankingInit {
  /** Added for a system candidate. */
  trustSystem?: number;
  /** Added for a trusted candidate. */
  trustTrusted?: number;
  /** Added for an unverified candidate. */
  trustUnverified?: number;
  /** Added for an untrusted candidate. */
  trustUntrusted?: number;
  /** Times the recency: 1 for the newest sequence, 0 for the oldest, 0 without one. */
  recency?: number;
}

/** What a builder gathers from its host: one builder interface from no sources at all up to every source. (as the package gives it) */
export type Profile =
  | "passthrough"
  | { rag: RagSettings }
  | { ragMemory: RagMemorySettings }
  | { full: FullSettings };

/** What a builder gathers from its host: one builder interface from no sources at all up to every source. (as the package accepts it) */
export type ProfileInit =
  | "passthrough"
  | { rag: RagSettingsInit }
  | { ragMemory: RagMemorySettingsInit }
  | { full: FullSettingsInit };

/** Settings of the `full` profile. (as the package gives it) */
export interface FullSettings {
  /** Most candidates to ask `sources.retrieve` for. */
  retrieveLimit: number;
  /** Most graph hops from the retrieved items (0: no expansion). */
  graphDepth: number;
  /** Most memory items to ask `sources.recall-memory` for. */
  memoryLimit: number;
  /** Whether to ask `sources.repository-state`. */
  repositoryState: boolean;
}

/** Settings of the `full` profile. (as the package accepts it) */
export interface FullSettingsInit {
  /** Most candidates to ask `sources.retrieve` for. */
  retrieveLimit: number;
  /** Most graph hops from the retrieved items (0: no expansion). */
  graphDepth: number;
  /** Most memory items to ask `sources.recall-memory` for. */
  memoryLimit: number;
  /** Whether to ask `sources.repository-state`. */
  repositoryState: boolean;
}

/** Settings of the `rag` profile. (as the package gives it) */
export interface RagSettings {
  /** Most candidates to ask `sources.retrieve` for. */
  retrieveLimit: number;
}

/** Settings of the `rag` profile. (as the package accepts it) */
export interface RagSettingsInit {
  /** Most candidates to ask `sources.retrieve` for. */
  retrieveLimit: number;
}

/** Settings of the `rag-memory` profile. (as the package gives it) */
export interface RagMemorySettings {
  /** Most candidates to ask `sources.retrieve` for. */
  retrieveLimit: number;
  /** Most memory items to ask `sources.recall-memory` for. */
  memoryLimit: number;
}

/** Settings of the `rag-memory` profile. (as the package accepts it) */
export interface RagMemorySettingsInit {
  /** Most candidates to ask `sources.retrieve` for. */
  retrieveLimit: number;
  /** Most memory items to ask `sources.recall-memory` for. */
  memoryLimit: number;
}

/** The context a skill receives after dispatch. (as the package gives it) */
export interface RequestContext {
  /** The raw query. */
  userQuery: string;
  /** The conversation turns the pack kept, oldest first. */
  conversationHistory: ConversationTurn[];
  /** Retrieved items the pack kept, as packed (after policy). */
  retrievedContext: PackEntry[];
  /** Memory items the pack kept, as packed (after policy). */
  memoryItems: PackEntry[];
  /** Session. */
  sessionId: string | null;
  /** Trace. */
  traceId: string;
  /** User. */
  userId: string | null;
}

/** The context a skill receives after dispatch. (as the package accepts it) */
export interface RequestContextInit {
  /** The raw query. */
  userQuery: string;
  /** The conversation turns the pack kept, oldest first. */
  conversationHistory: ConversationTurnInit[];
  /** Retrieved items the pack kept, as packed (after policy). */
  retrievedContext: PackEntryInit[];
  /** Memory items the pack kept, as packed (after policy). */
  memoryItems: PackEntryInit[];
  /** Session. */
  sessionId?: string | null;
  /** Trace. */
  traceId: string;
  /** User. */
  userId?: string | null;
}

/** The format of a router config text. */
export type ConfigFormat = "yaml" | "json";

/** How one rule fared on a query. (as the package gives it) */
export interface RuleScore {
  /** The rule, e.g. "keywords: weather, forecast". */
  rule: string;
  /** Its weight, in (0, 1]. */
  weight: number;
  /** What matched (normalised for keywords and phrases), if it matched. */
  matched: string | null;
}

/** How one rule fared on a query. (as the package accepts it) */
export interface RuleScoreInit {
  /** The rule, e.g. "keywords: weather, forecast". */
  rule: string;
  /** Its weight, in (0, 1]. */
  weight: number;
  /** What matched (normalised for keywords and phrases), if it matched. */
  matched?: string | null;
}

/** How one route fared on a query. (as the package gives it) */
export interface RouteScore {
  /** Route name. */
  route: string;
  /** Its score: 1 - product of (1 - weight) over matched rules. */
  score: number;
  /** Every rule, in config order. */
  rules: RuleScore[];
}

/** How one route fared on a query. (as the package accepts it) */
export interface RouteScoreInit {
  /** Route name. */
  route: string;
  /** Its score: 1 - product of (1 - weight) over matched rules. */
  score: number;
  /** Every rule, in config order. */
  rules: RuleScoreInit[];
}

/** A named capture of an entity pattern. (as the package gives it) */
export interface Entity {
  /** The capture group's name. */
  name: string;
  /** The captured text, as written in the query. */
  value: string;
}

/** A named capture of an entity pattern. (as the package accepts it) */
export interface EntityInit {
  /** The capture group's name. */
  name: string;
  /** The captured text, as written in the query. */
  value: string;
}

/** What the router decided, and why. (as the package gives it) */
export interface RoutingDecision {
  /** The best route, if any rule of any route matched. */
  route: string | null;
  /** Its skill. */
  skill: string | null;
  /** best x (1 - second best), in [0, 1]. */
  confidence: number;
  /** The threshold that applied (the route's own, or the global one). */
  threshold: number;
  /** No route, or confidence below the threshold. */
  lowConfidence: boolean;
  /** The reference/comparison cue found in the query; such a query goes to the builder even on a confident route. */
  referenceCue: string | null;
  /** Named captures of the best route's entity patterns. */
  matchedEntities: Entity[];
  /** Every route with a score above zero, best first (ties by name). */
  scores: RouteScore[];
}

/** What the router decided, and why. (as the package accepts it) */
export interface RoutingDecisionInit {
  /** The best route, if any rule of any route matched. */
  route?: string | null;
  /** Its skill. */
  skill?: string | null;
  /** best x (1 - second best), in [0, 1]. */
  confidence: number;
  /** The threshold that applied (the route's own, or the global one). */
  threshold: number;
  /** No route, or confidence below the threshold. */
  lowConfidence: boolean;
  /** The reference/comparison cue found in the query; such a query goes to the builder even on a confident route. */
  referenceCue?: string | null;
  /** Named captures of the best route's entity patterns. */
  matchedEntities: EntityInit[];
  /** Every route with a score above zero, best first (ties by name). */
  scores: RouteScoreInit[];
}

/** A confident route's dispatch. (as the package gives it) */
export interface SkillDispatch {
  /** The route. */
  route: string;
  /** The skill to run. */
  skill: string;
  /** Entities the router matched. */
  matchedEntities: Entity[];
  /** The trivial context: the query and the ids, nothing gathered. */
  context: RequestContext;
}

/** A confident route's dispatch. (as the package accepts it) */
export interface SkillDispatchInit {
  /** The route. */
  route: string;
  /** The skill to run. */
  skill: string;
  /** Entities the router matched. */
  matchedEntities: EntityInit[];
  /** The trivial context: the query and the ids, nothing gathered. */
  context: RequestContextInit;
}

/** The builder branch's dispatch. (as the package gives it) */
export interface FallbackDispatch {
  /** The request context drawn from the pack. */
  context: RequestContext;
  /** The assembled pack, with its snapshot. */
  pack: ContextPack;
}

/** The builder branch's dispatch. (as the package accepts it) */
export interface FallbackDispatchInit {
  /** The request context drawn from the pack. */
  context: RequestContextInit;
  /** The assembled pack, with its snapshot. */
  pack: ContextPackInit;
}

/** Where a query goes. (as the package gives it) */
export type Dispatch =
  | { skill: SkillDispatch }
  | { fallback: FallbackDispatch };

/** Where a query goes. (as the package accepts it) */
export type DispatchInit =
  | { skill: SkillDispatchInit }
  | { fallback: FallbackDispatchInit };

/** The routing decision and what came of it. (as the package gives it) */
export interface Handling {
  /** What the router decided, and why. */
  decision: RoutingDecision;
  /** Where the query went. */
  dispatch: Dispatch;
}

/** The routing decision and what came of it. (as the package accepts it) */
export interface HandlingInit {
  /** What the router decided, and why. */
  decision: RoutingDecisionInit;
  /** Where the query went. */
  dispatch: DispatchInit;
}

/** The policy's word on one item. (as the package gives it) */
export type Verdict =
  | "allow"
  | { redact: string }
  | { deny: string };

/** The policy's word on one item. (as the package accepts it) */
export type VerdictInit =
  | "allow"
  | { redact: string }
  | { deny: string };

/** The arguments of `sources.retrieve`. (as the package gives it) */
export interface RetrieveRequest {
  query: string;
  limit: number;
}

/** The arguments of `sources.retrieve`. (as the package accepts it) */
export interface RetrieveRequestInit {
  query: string;
  limit: number;
}

/** The arguments of `sources.expand-graph`. (as the package gives it) */
export interface ExpandGraphRequest {
  /** The items to expand from, best first. */
  itemIds: string[];
  depth: number;
}

/** The arguments of `sources.expand-graph`. (as the package accepts it) */
export interface ExpandGraphRequestInit {
  /** The items to expand from, best first. */
  itemIds: string[];
  depth: number;
}

/** The arguments of `sources.recall-memory`. (as the package gives it) */
export interface RecallMemoryRequest {
  userId: string;
  query: string;
  limit: number;
}

/** The arguments of `sources.recall-memory`. (as the package accepts it) */
export interface RecallMemoryRequestInit {
  userId: string;
  query: string;
  limit: number;
}

/** The arguments of `policy.review`. (as the package gives it) */
export interface ReviewRequest {
  /** The batch, in rank order, each text as the host gave it. */
  items: Candidate[];
}

/** The arguments of `policy.review`. (as the package accepts it) */
export interface ReviewRequestInit {
  /** The batch, in rank order, each text as the host gave it. */
  items: CandidateInit[];
}

/** The arguments of `counter.count-tokens`. (as the package gives it) */
export interface CountTokensRequest {
  /** The name the request's `tokenizer.host` gives. */
  tokenizer: string;
  /** The texts to count. */
  texts: string[];
}

/** The arguments of `counter.count-tokens`. (as the package accepts it) */
export interface CountTokensRequestInit {
  /** The name the request's `tokenizer.host` gives. */
  tokenizer: string;
  /** The texts to count. */
  texts: string[];
}

/** The arguments of `counter.count-messages`. (as the package gives it) */
export interface CountMessagesRequest {
  /** The name the trim's `tokenizer.host` gives. */
  tokenizer: string;
  /** The lists to count, each as one request. */
  lists: MessageList[];
}

/** The arguments of `counter.count-messages`. (as the package accepts it) */
export interface CountMessagesRequestInit {
  /** The name the trim's `tokenizer.host` gives. */
  tokenizer: string;
  /** The lists to count, each as one request. */
  lists: MessageListInit[];
}

/** The arguments of `counter.split-text`. (as the package gives it) */
export interface SplitTextRequest {
  /** The texts to split. */
  texts: string[];
}

/** The arguments of `counter.split-text`. (as the package accepts it) */
export interface SplitTextRequestInit {
  /** The texts to split. */
  texts: string[];
}

/** The arguments of `summarizer.summarize`. (as the package gives it) */
export interface SummarizeRequest {
  /** One text per section, each to summarise within its target. */
  requests: SummaryRequest[];
  /** The tokenizer the targets are counted in. */
  tokenizer: Tokenizer;
}

/** The arguments of `summarizer.summarize`. (as the package accepts it) */
export interface SummarizeRequestInit {
  /** One text per section, each to summarise within its target. */
  requests: SummaryRequestInit[];
  /** The tokenizer the targets are counted in. */
  tokenizer: TokenizerInit;
}

/** One call of a step: the import of the same name, with its arguments but the context (the request's). (as the package gives it) */
export type Call =
  | { retrieve: RetrieveRequest }
  | { expandGraph: ExpandGraphRequest }
  | { recallMemory: RecallMemoryRequest }
  | "repository-state"
  | { review: ReviewRequest }
  | { summarize: SummarizeRequest }
  | { countTokens: CountTokensRequest }
  | { countMessages: CountMessagesRequest }
  | { splitText: SplitTextRequest };

/** One call of a step: the import of the same name, with its arguments but the context (the request's). (as the package accepts it) */
export type CallInit =
  | { retrieve: RetrieveRequestInit }
  | { expandGraph: ExpandGraphRequestInit }
  | { recallMemory: RecallMemoryRequestInit }
  | "repository-state"
  | { review: ReviewRequestInit }
  | { summarize: SummarizeRequestInit }
  | { countTokens: CountTokensRequestInit }
  | { countMessages: CountMessagesRequestInit }
  | { splitText: SplitTextRequestInit };

/** A value, or a Promise of it. */
export type Awaitable<T> = T | PromiseLike<T>;

/**
 * The host's functions a builder is lent, one per function the component
 * imports. Each may return its value or a Promise; one it lacks is a
 * capability this host does not provide (the review: every item allowed).
 * A callback that throws or rejects is that call's failure.
 */
export interface Callbacks {
  retrieve?(context: AgentContextInit, query: string, limit: number): Awaitable<CandidateInit[]>;
  expandGraph?(context: AgentContextInit, itemIds: string[], depth: number): Awaitable<CandidateInit[]>;
  recallMemory?(context: AgentContextInit, userId: string, query: string, limit: number): Awaitable<CandidateInit[]>;
  repositoryState?(context: AgentContextInit): Awaitable<CandidateInit[]>;
  review?(context: AgentContextInit, items: Candidate[]): Awaitable<VerdictInit[]>;
  summarize?(requests: SummaryRequest[], tokenizer: Tokenizer): Awaitable<string[]>;
  countTokens?(tokenizer: string, texts: string[]): Awaitable<number[]>;
  countMessages?(tokenizer: string, lists: MessageList[]): Awaitable<number[]>;
  splitText?(texts: string[]): Awaitable<TextPiecesInit[]>;
}
