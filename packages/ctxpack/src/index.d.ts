// The package's API. The WIT's types are in ./types.js (generated).
import type {
  AgentContext, AssembleRequestInit, AssemblyFailure, BuilderConfigInit, Callbacks, ChatInit, ChatShape,
  ContextPack, CountRequestInit, CtxpackError as CtxpackErrorValue, Handling, Reason, RoutingDecision,
  Snapshot, SnapshotDiff, TokenCounts, TokenizerFileInit, TokenizerInit, Trimmed, TrimRequestInit,
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

/**
 * The WebAssembly trapped (a fault in ctxpack, or a limit of the engine
 * such as its memory): the module was replaced, the next call works, and
 * a Builder or Router made before is made again on its next use. `cause`
 * is the trap.
 */
export class ComponentTrapped extends Error {
  readonly cause: unknown;
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
  /** Counts texts, and a chat as a request sends it, as an assembly charges them. */
  count(request: Partial<CountRequestInit>): TokenCounts;
  /** Each text's tokens (`options.model`'s or `options.tokenizer`'s, 'o200k-base' when neither): the texts cross as bytes. */
  countTexts(texts: Iterable<string>, options?: { model?: string; tokenizer?: TokenizerInit }): number[];
  /** LangChain's trim as one core operation (see `trimMessages` for LangChain.js's options); a host counter or splitter lent as `countMessages` / `splitText`. */
  trim(request: Partial<TrimRequestInit> & { maxTokens: number; chat: ChatInit }, callbacks?: Callbacks): Promise<Trimmed>;
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

/** An OpenAI Chat Completions message as the core reads it (any of the
 * shapes a `ChatInit` names is carried; this is the one LangChain's map to). */
export interface ChatMessage {
  /** 'system', 'developer', 'user', 'assistant' or 'tool' (checked by the core, naming the message). */
  role: string;
  content: string | null | Array<Record<string, unknown>>;
  name?: string;
  tool_calls?: Array<{ id: string; type?: 'function'; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

/** A message `chat` reads: a provider's (a plain object), or a @langchain/core message. */
export type MessageLike = ChatMessage | Record<string, unknown> | { _getType(): string; content: unknown };

/**
 * `messages` as a request's `chat`: plain objects in `shape` as they are
 * (the core reads them, naming a part it does not carry), LangChain.js
 * messages as OpenAI's (the shape then `'openai-chat'`).
 */
export function chat(messages: Iterable<MessageLike>, shape?: ChatShape): ChatInit & { messages: unknown[] };

/**
 * A pack's request (`pack.chat`, assembled from `chat(messages)`) as
 * LangChain.js messages: each of yours the pack kept, the same object (a
 * copy where the pack added a cache hint or cleared a result), and the
 * pack's own as a SystemMessage (a HumanMessage where the model takes
 * system text only at the top). Needs @langchain/core.
 */
export function toLangChain(pack: ContextPack, messages: Iterable<MessageLike>): Promise<unknown[]>;

/**
 * The tokens of `text` as `options.tokenizer` ('o200k-base' when neither
 * is given) or `options.model`'s profile counts it: the same number in
 * every host and every assembly.
 */
export function countTokens(text: string, options?: { model?: string; tokenizer?: TokenizerInit }): Promise<number>;

/** The options of `trimMessages`. */
export interface TrimOptions<M extends MessageLike = MessageLike> {
  maxTokens: number;
  /**
   * A tokenizer ctxpack counts with, or LangChain.js's counter: a function
   * of a list of messages, or a model with `getNumTokens(content)`.
   */
  tokenCounter?: TokenizerInit | ((messages: M[]) => number | Promise<number>)
    | { getNumTokens(content: unknown): number | Promise<number> };
  /** The model the messages are for: each message counted as its provider is sent it (its tokenizer, per-message and per-call overhead, images). */
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
  builder?: Builder;
}

/** A trimmer for a chain: in Node, LangChain.js's RunnableLambda; elsewhere a function `pipe` takes as one. */
export interface Trimmer<M extends MessageLike = MessageLike> {
  invoke(messages: readonly M[]): Promise<M[]>;
  batch(inputs: Iterable<readonly M[]>): Promise<M[][]>;
}

/** LangChain.js's `trimMessages`, by ctxpack's core: the newest (or, with `strategy: 'first'`, the oldest) messages that fit, unchanged. */
export function trimMessages<M extends MessageLike>(messages: readonly M[], options: TrimOptions<M>): Promise<M[]>;
/** Given only the options, as LangChain.js's: a trimmer for a chain (an unknown option refused now, the rest when it trims). */
export function trimMessages<M extends MessageLike = MessageLike>(options: TrimOptions<M>): Trimmer<M>;
