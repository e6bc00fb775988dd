// The package's API. The WIT's types are in ./types.js (generated).
import type {
  AgentContext, AssembleRequestInit, AssemblyFailure, BuilderConfigInit, Candidate,
  CandidateInit, ContextPack, CtxpackError as CtxpackErrorValue, Handling,
  Reason, RoutingDecision, Snapshot, SnapshotDiff, SummaryRequest, Tokenizer, VerdictInit,
} from './types.js';

export * from './types.js';

type Awaitable<T> = T | PromiseLike<T>;

/**
 * The stores a builder is lent. Each may return its value or a Promise; one
 * it lacks is a source this host does not provide (the review: every item
 * allowed). A callback that throws or rejects is that call's failure.
 */
export interface Callbacks {
  retrieve?(context: AssembleRequestInit['context'], query: string, limit: number): Awaitable<CandidateInit[]>;
  expandGraph?(context: AssembleRequestInit['context'], itemIds: string[], depth: number): Awaitable<CandidateInit[]>;
  recallMemory?(context: AssembleRequestInit['context'], userId: string, query: string, limit: number): Awaitable<CandidateInit[]>;
  repositoryState?(context: AssembleRequestInit['context']): Awaitable<CandidateInit[]>;
  review?(context: AssembleRequestInit['context'], items: Candidate[]): Awaitable<VerdictInit[]>;
  summarize?(requests: SummaryRequest[], tokenizer: Tokenizer): Awaitable<string[]>;
}

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
  assemble(request: AssembleRequestInit, callbacks?: Callbacks): Promise<ContextPack>;
  assembleText(request: AssembleRequestInit, callbacks?: Callbacks): Promise<string>;
  handle(router: Router, request: AssembleRequestInit, callbacks?: Callbacks): Promise<Handling>;
  handleText(router: Router, request: AssembleRequestInit, callbacks?: Callbacks): Promise<string>;
  free(): void;
}

export function diffSnapshots(before: Snapshot, after: Snapshot): Promise<SnapshotDiff>;

/** Why a candidate was taken or dropped, in words (the WIT's documentation). */
export function explainReason(reason: Reason): string;

export type { AgentContext };
