// The package's API. The WIT's types are in ./types.js (generated).
import type {
  AgentContext, AssembleRequestInit, AssemblyFailure, BuilderConfigInit, CachePrefix, Callbacks,
  ContextPack, ConversationTurnInit, CtxpackError as CtxpackErrorValue, Handling,
  Reason, RoutingDecision, Snapshot, SnapshotDiff, TokenizerFileInit, TokenizerInit,
} from './types.js';

export * from './types.js';

/** Loads the WebAssembly once; every factory awaits it. */
export function init(
  source?: string | URL | Request | Response | BufferSource | WebAssembly.Module,
): Promise<void>;

/** A refusal from ctxpack; `error` is the typed value. */
export class CtxpackError extends Error {
  readonly error: CtxpackErrorValue;
}

/** An assembly that gave no pack, with its failed snapshot once begun. */
export class AssemblyFailed extends CtxpackError {
  readonly failure: AssemblyFailure;
  get snapshot(): Snapshot | null;
}

/** Thrown by a callback: that call fails with exactly this message. */
export class HostError extends Error {
  constructor(message: string);
}

export class Router {
  private constructor();
  static create(config: string, format?: 'yaml' | 'json'): Promise<Router>;
  route(query: string): RoutingDecision;
  free(): void;
}

export class Builder {
  private constructor();
  static create(config?: BuilderConfigInit, callbacks?: Callbacks): Promise<Builder>;
  readonly callbacks: Callbacks;
  /** The configuration's profile, as `PROFILES` names it (`'rag-memory'`). */
  readonly profile: string;
  assemble(request: AssembleRequestInit, callbacks?: Callbacks): Promise<ContextPack>;
  assembleText(request: AssembleRequestInit, callbacks?: Callbacks): Promise<string>;
  handle(router: Router, request: AssembleRequestInit, callbacks?: Callbacks): Promise<Handling>;
  handleText(router: Router, request: AssembleRequestInit, callbacks?: Callbacks): Promise<string>;
  free(): void;
}

export function diffSnapshots(before: Snapshot, after: Snapshot): Promise<SnapshotDiff>;

/**
 * The sources each profile may call, as capabilities
 * (`PROFILES['rag']` is `['sources.retrieve']`). Lending a builder a
 * source its profile never calls is refused, naming the profiles that do.
 */
export const PROFILES: Readonly<Record<string, readonly string[]>>;

/** Why a candidate was taken or dropped, in words (the WIT's documentation). */
export function explainReason(reason: Reason): string;

/**
 * The tokenizer file a model ships, for a BuilderConfig's `tokenizers`: its
 * text or its bytes. A request counts with it as `{ named: name }`.
 */
export function tokenizerFile(
  name: string,
  file: string | ArrayBuffer | ArrayBufferView,
  pattern?: string | null,
): TokenizerFileInit;

export type { AgentContext };

/** A content block of Anthropic's Messages API that ctxpack carries. */
export type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature?: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; tool_use_id: string; content?: string | Array<{ type: 'text'; text: string }>; is_error?: boolean }
  | { type: 'image_url'; image_url: string | { url: string; detail?: 'low' | 'high' | 'auto' } }
  | { type: 'image'; source: { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string } }
  | { type: 'image'; source_type?: 'base64' | 'url'; data?: string; url?: string; base64?: string; mime_type?: string };

/** An OpenAI-style chat message (content as text or text parts), or one in
 * Anthropic's blocks (its calls as `tool_use`, results as `tool_result`). */
export interface ChatMessage {
  /** 'system', 'developer', 'user', 'assistant' or 'tool' (checked when read). */
  role: string;
  content: string | null | Array<string | ContentBlock>;
  tool_calls?: Array<{ id: string; type?: 'function'; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

/** A message ctxpack reads: OpenAI's shape, or a @langchain/core message (by its shape). */
export type MessageLike = ChatMessage | { _getType(): string; content: unknown };

/** Messages as a request's conversation, a message's images charged as `model`'s provider bills them
 * (OpenAI's rule without one) or as `imageTokens` gives them; a message it cannot read is a TypeError naming it. */
export function conversationOf(messages: readonly MessageLike[], options?: {
  model?: string;
  imageTokens?: number | ((part: Record<string, unknown>) => number);
}): ConversationTurnInit[];

/** The messages of `messages` (the pack's conversation) that the pack kept, unchanged. */
export function keptMessages<M>(pack: ContextPack, messages: readonly M[]): M[];

/** OpenAI messages: the pack's system messages, then the kept originals (or the pack's turns). */
export function toOpenAI(pack: ContextPack, messages?: readonly MessageLike[]): ChatMessage[];

/**
 * Anthropic's `{ system, messages }`; throws when the first message would
 * not be the user's. Cache breakpoints (`cache_control`) mark the prefixes
 * the next turn repeats where they reach the model's fewest cacheable
 * tokens; the system text is then a list of one text block.
 */
export function toAnthropic(pack: ContextPack, messages?: readonly MessageLike[]): {
  system: string | Array<{ type: 'text'; text: string; cache_control?: { type: 'ephemeral' } }>;
  messages: Array<{ role: 'user' | 'assistant'; content: Array<Record<string, unknown>> }>;
};

/**
 * LangChain messages (needs @langchain/core): the pack's system messages and
 * the kept originals when they are LangChain's, otherwise made from `toOpenAI`'s.
 */
export function toLangChain(pack: ContextPack, messages?: readonly MessageLike[]): Promise<unknown[]>;

/**
 * What a provider's prompt cache could serve of `pack` after `previous`
 * was sent: the longest of `previous`'s cache prefixes that `pack` begins
 * with byte for byte, or null.
 */
export function cachedPrefix(previous: ContextPack, pack: ContextPack): Promise<CachePrefix | null>;

/** The options of `trimMessages`. */
export interface TrimOptions<M extends MessageLike = MessageLike> {
  maxTokens: number;
  /**
   * A tokenizer ctxpack counts with, or LangChain.js's counter: a function
   * of a list of messages, or a model with `getNumTokens(content)`.
   */
  tokenCounter?: TokenizerInit | ((messages: M[]) => number | Promise<number>)
    | { getNumTokens(content: unknown): number | Promise<number> };
  /** The model the messages are for: its tokenizer and per-message overhead are the defaults. */
  model?: string;
  /** `'last'`, the newest messages (the default), or `'first'`, the oldest (without `startOn` or `includeSystem`). */
  strategy?: 'last' | 'first';
  /** Cuts the next message to the room left, as LangChain.js does (never a message of a tool call's unit). */
  allowPartial?: boolean;
  startOn?: 'human' | 'user' | null;
  /** Drops the messages after the last one of these types first, as LangChain.js does. */
  endOn?: string | (new (fields: object) => unknown) | Array<string | (new (fields: object) => unknown)>;
  /** Where `allowPartial` may cut a text (lines by default): a function or a TextSplitter. Used only with `allowPartial`. */
  textSplitter?: ((text: string) => string[] | Promise<string[]>) | { splitText(text: string): Promise<string[]> };
  includeSystem?: boolean;
  entryOverhead?: number;
  /** An image's tokens, where `model`'s rule is not known: a number, or a function of the image part. */
  imageTokens?: number | ((part: Record<string, unknown>) => number);
  builder?: Builder;
}

/** A trimmer for a chain: LangChain.js's `pipe` takes it as a RunnableLambda. */
export interface Trimmer<M extends MessageLike = MessageLike> {
  (messages: readonly M[]): Promise<M[]>;
  invoke(messages: readonly M[]): Promise<M[]>;
  batch(inputs: Iterable<readonly M[]>): Promise<M[][]>;
}

/** LangChain.js's `trimMessages`, packed by ctxpack: the newest (or, with `strategy: 'first'`, the oldest) messages that fit, unchanged. */
export function trimMessages<M extends MessageLike>(messages: readonly M[], options: TrimOptions<M>): Promise<M[]>;
/** Given only the options, as LangChain.js's: a trimmer for a chain (an unknown option refused now, the rest when it trims). */
export function trimMessages<M extends MessageLike = MessageLike>(options: TrimOptions<M>): Trimmer<M>;
