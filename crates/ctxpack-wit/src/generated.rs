// The conversions between the core's types and the bindings' of the
// WIT. Written by `cargo run -p ctxpack-codegen` from wit/*.wit: do
// not edit.

/// Expands the conversions between `ctxpack_core` and the generated
/// `types` and `policy` modules named here, e.g.
/// `ctxpack_wit::wit_conversions!(crate::bindings::ctxpack::context);`.
/// The calling crate must depend on `ctxpack-core`.
///
/// Bindings generated with borrowed import parameters (wit-bindgen's
/// `ownership: Borrowing { duplicate_if_necessary: true }`) name the owned
/// form of a record passed to imports `…Result`:
/// `wit_conversions!(… , borrowing)` expands for those names, and the
/// borrowed forms are the calling crate's to fill.
#[macro_export]
macro_rules! wit_conversions {
    ($($root:ident)::+) => {
        $crate::wit_conversions!(@ $($root)::+; AgentContext, Candidate, MessageList, Partial, Provenance, SummaryRequest, Tokenizer);
    };
    ($($root:ident)::+, borrowing) => {
        $crate::wit_conversions!(@ $($root)::+; AgentContextResult, CandidateResult, MessageListResult, PartialResult, ProvenanceResult, SummaryRequestResult, TokenizerResult);
    };
    (@ $($root:ident)::+; $AgentContext:ident, $Candidate:ident, $MessageList:ident, $Partial:ident, $Provenance:ident, $SummaryRequest:ident, $Tokenizer:ident) => {
        #[allow(unused_imports)]
        mod ctxpack_wit_conversions {
            use ::ctxpack_core as ctx;
            use $($root)::+::types as wit;
            use $($root)::+::policy as policy;
            use $crate::Convert as _;

            $crate::__shaped_conversions!();
            $crate::__record!(ctx::AgentContext, wit::$AgentContext, { session_id, trace_id, user_id, tenant_id, project_id, run_id, attempt_id, scopes });
            $crate::__cases!(ctx::Tokenizer, wit::$Tokenizer, [O200kBase, Cl100kBase] [CharsPerToken, Named, Host]);
            $crate::__record!(ctx::ModelProfile, wit::ModelProfile, { name, tokenizer, context_window, output_reserve, message_overhead, reply_overhead, cache_min_tokens, images });
            $crate::__cases!(ctx::ImageRule, wit::ImageRule, [Pixels, GeminiTiles, None] [Tiles, Patches]);
            $crate::__record!(ctx::ImageTiles, wit::ImageTiles, { base, tile });
            $crate::__cases!(ctx::Assumed, wit::Assumed, [Tokenizer, Budget, EntryOverhead, ReplyOverhead] []);
            $crate::__record!(ctx::ModelUse, wit::ModelUse, { profile, assumed });
            $crate::__record!(ctx::TokenizerFile, wit::TokenizerFile, { name, text, pattern });
            $crate::__cases!(ctx::Layer, wit::Layer, [L0, L1, L2] []);
            $crate::__cases!(ctx::Section, wit::Section, [SystemPrompt, WorkflowStatus, MandatoryInstructions, CurrentTask, ConversationState, CurrentDiff, ToolResults, RepositoryState, RelevantKnowledge, GraphNeighbours, EpisodicMemory, SupportingContext, StageSummaries] []);
            $crate::__cases!(ctx::TrustTier, wit::TrustTier, [System, Trusted, Unverified, Untrusted] []);
            $crate::__record!(ctx::Provenance, wit::$Provenance, { source_kind, reference, source_version, index_revision });
            $crate::__cases!(ctx::Role, wit::Role, [System, User, Assistant, Tool] []);
            $crate::__record!(ctx::ConversationTurn, wit::ConversationTurn, { role, content, tool_call_id, attached_tokens });
            $crate::__cases!(ctx::ConversationStart, wit::ConversationStart, [UserTurn, AnyTurn] []);
            $crate::__cases!(ctx::PackForm, wit::PackForm, [Text, Messages] []);
            $crate::__cases!(ctx::Layout, wit::Layout, [ContextFirst, CacheFirst] []);
            $crate::__record!(ctx::WorkflowStatus, wit::WorkflowStatus, { status, stage_id });
            $crate::__record!(ctx::StageSummary, wit::StageSummary, { stage_id, outcome, summary });
            $crate::__record!(ctx::Candidate, wit::$Candidate, { id, section, text, provenance, trust, score, sequence, scope, token_count });
            $crate::__record!(ctx::AssembleRequest, wit::AssembleRequest, { context, query, model, tokenizer, budget, entry_overhead, reply_overhead, system_prompt, workflow, instructions, current_task, conversation, chat, keep_last, conversation_start, form, layout, stage_summaries, compaction });
            $crate::__cases!(ctx::ChatShape, wit::ChatShape, [OpenaiChat, OpenaiResponses, Anthropic, Gemini] []);
            $crate::__record!(ctx::Chat, wit::Chat, { shape, messages });
            $crate::__record!(ctx::CountRequest, wit::CountRequest, { model, tokenizer, entry_overhead, reply_overhead, texts, chat });
            $crate::__record!(ctx::TokenCounts, wit::TokenCounts, { tokenizer, model, texts, system, messages, turns, total });
            $crate::__cases!(ctx::TrimStrategy, wit::TrimStrategy, [Last, First] []);
            $crate::__cases!(ctx::TextSplit, wit::TextSplit, [Lines, Host] []);
            $crate::__record!(ctx::TrimRequest, wit::TrimRequest, { chat, max_tokens, model, tokenizer, entry_overhead, reply_overhead, strategy, include_system, start_on, end_on, allow_partial, split });
            $crate::__record!(ctx::Partial, wit::$Partial, { message, blocks, text });
            $crate::__record!(ctx::BlockRange, wit::BlockRange, { first, count });
            $crate::__record!(ctx::MessageList, wit::$MessageList, { messages, cut });
            $crate::__record!(ctx::TextPieces, wit::TextPieces, { pieces });
            $crate::__record!(ctx::Trimmed, wit::Trimmed, { kept, partial, messages, tokens });
            $crate::__record!(ctx::ChatRequest, wit::ChatRequest, { shape, body, sources });
            $crate::__record!(ctx::ChatReport, wit::ChatReport, { shape, turns, bounded });
            $crate::__record!(ctx::Compaction, wit::Compaction, { summary, turns, cleared, hash });
            $crate::__record!(ctx::PackEntry, wit::PackEntry, { id, layer, section, role, text, tokens, provenance, trust });
            $crate::__cases!(ctx::Strategy, wit::Strategy, [L0Immutable, KeepLast, ConversationBudget, EvictOldest, Summarize, Truncate] []);
            $crate::__record!(ctx::CompressionMetadata, wit::CompressionMetadata, { applied_strategies, truncated_layers, entries_dropped });
            $crate::__cases!(ctx::Reason, wit::Reason, [Mandatory, WithinBudget, EvictedOldest, OrphanToolResult, OutOfScope, NoProvenance, SectionNotAllowed, AssemblyFailed, Unreviewed, BeforeUserTurn] [KeepLast, OverBudget, ToolPair, DuplicateOf, PolicyDenied, Summarized, StepCut, BeyondLimit]);
            $crate::__record!(ctx::Shortfall, wit::Shortfall, { needed, remaining });
            $crate::__cases!(ctx::SnapshotStatus, wit::SnapshotStatus, [Complete, Degraded, Truncated, Failed] []);
            $crate::__record!(ctx::SnapshotEntry, wit::SnapshotEntry, { id, layer, section, origin, provenance, trust, score, tokens, counted, included, reason, compressed, redacted, run });
            $crate::__record!(ctx::Run, wit::EntryRun, { last_id, count });
            $crate::__cases!(ctx::Counted, wit::Counted, [Exact, Over, Uncounted] []);
            $crate::__cases!(ctx::Origin, wit::Origin, [Request, Retrieval, Memory, Graph, Repository, Summary] []);
            $crate::__record!(ctx::SummaryRequest, wit::$SummaryRequest, { section, text, target_tokens });
            $crate::__record!(ctx::SourceCall, wit::SourceCall, { capability, outcome });
            $crate::__cases!(ctx::SourceOutcome, wit::SourceOutcome, [] [Answered, Failed, Skipped]);
            $crate::__record!(ctx::SectionCompression, wit::SectionCompression, { section, target_tokens, outcome });
            $crate::__cases!(ctx::CompressionOutcome, wit::CompressionOutcome, [] [Summarized, Cut, Skipped, Whole]);
            $crate::__record!(ctx::FenceReport, wit::FenceReport, { keyed, stripped, defused, context_role, quoted_lines });
            $crate::__record!(ctx::Snapshot, wit::Snapshot, { id, tenant_id, project_id, run_id, attempt_id, scopes, tokenizer, model, token_budget, tokens_used, text_tokens, message_tokens, stable_prefix_tokens, cache_prefixes, content_hash, index_revisions, memory_items, status, failure, profile, plan, source_calls, compressions, fence, chat, entries });
            $crate::__cases!(ctx::CacheBoundary, wit::CacheBoundary, [Stable, History, Turn] []);
            $crate::__record!(ctx::CachePrefix, wit::CachePrefix, { boundary, messages, tokens, hash, cacheable });
            $crate::__record!(ctx::ContextPack, wit::ContextPack, { id, session_id, cache_key, trace_id, stage_id, entries, text, messages, budget_used, budget_limit, compaction, chat, compression, snapshot, event, metrics });
            $crate::__record!(ctx::Message, wit::Message, { role, content, tool_call_id, attached_tokens });
            $crate::__record!(ctx::ContextAssembled, wit::ContextAssembled, { context_snapshot_id, tenant_id, run_id, attempt_id, status, tokens_used, token_budget });
            $crate::__record!(ctx::Metrics, wit::Metrics, { tokens_per_section, dropped_by_reason });
            $crate::__record!(ctx::SectionTokens, wit::SectionTokens, { section, tokens });
            $crate::__record!(ctx::ReasonCount, wit::ReasonCount, { reason, count });
            $crate::__cases!(ctx::ChangeKind, wit::ChangeKind, [Entered, Left, Moved, Retokened, ReasonChanged, AppearedDropped, VanishedDropped] []);
            $crate::__record!(ctx::EntryState, wit::EntryState, { section, included, reason, tokens, position });
            $crate::__record!(ctx::Change, wit::Change, { id, origin, kind, before, after });
            $crate::__record!(ctx::SnapshotDiff, wit::SnapshotDiff, { before_id, after_id, status_before, status_after, tokens_before, tokens_after, changes, unchanged });
            $crate::__record!(ctx::HostError, wit::HostError, { capability, message });
            $crate::__record!(ctx::BuilderConfig, wit::BuilderConfig, { preload, tokenizers, models, profile, near_duplicate_threshold, ranking, plan, count_cache_entries, fence_key });
            $crate::__record!(ctx::Plan, wit::Plan, { default_budget, model_window, safety_margin, shares, compress, min_summary_tokens, cut_step, cut_share, compact_share, compact_tokens, clear_at_least });
            $crate::__record!(ctx::SectionShare, wit::SectionShare, { section, share });
            $crate::__record!(ctx::Ranking, wit::Ranking, { trust_system, trust_trusted, trust_unverified, trust_untrusted, recency });
            $crate::__cases!(ctx::Profile, wit::Profile, [Passthrough] [Rag, RagMemory, Full]);
            $crate::__record!(ctx::FullSettings, wit::FullSettings, { retrieve_limit, graph_depth, memory_limit, repository_state });
            $crate::__record!(ctx::RagSettings, wit::RagSettings, { retrieve_limit });
            $crate::__record!(ctx::RagMemorySettings, wit::RagMemorySettings, { retrieve_limit, memory_limit });
            $crate::__record!(ctx::RequestContext, wit::RequestContext, { user_query, conversation_history, retrieved_context, memory_items, session_id, trace_id, user_id });
            $crate::__cases!(ctx::ConfigFormat, wit::ConfigFormat, [Yaml, Json] []);
            $crate::__record!(ctx::RuleScore, wit::RuleScore, { rule, weight, matched });
            $crate::__record!(ctx::RouteScore, wit::RouteScore, { route, score, rules });
            $crate::__record!(ctx::Entity, wit::Entity, { name, value });
            $crate::__record!(ctx::RoutingDecision, wit::RoutingDecision, { route, skill, confidence, threshold, low_confidence, reference_cue, matched_entities, scores });
            $crate::__record!(ctx::SkillDispatch, wit::SkillDispatch, { route, skill, matched_entities, context });
            $crate::__record!(ctx::FallbackDispatch, wit::FallbackDispatch, { context, pack });
            $crate::__cases!(ctx::Dispatch, wit::Dispatch, [] [Skill, Fallback]);
            $crate::__record!(ctx::Handling, wit::Handling, { decision, dispatch });
            $crate::__cases!(ctx::Verdict, policy::Verdict, [Allow] [Redact, Deny]);
        }
    };
}

/// Calls `$callback!` with every function the component imports, by
/// interface, in the order the WIT lists them, one line each:
///
/// `function Capability [Request] (context) { param: kind [Owned] [Core], … } -> [Owned] [Core];`
///
/// `Capability` is the case of the core's `Call` and of the builder's
/// `call` variant, `Request` that case's record (none when it takes
/// nothing), `(context)` present when the function takes the agent
/// context. Each parameter has a kind (`str`, `strs`, `copy`,
/// `candidates`, `records`, `value`), its type as the bindings own it
/// (under the bindings' `ctxpack::context`, which the adapter names
/// `imports`: `imports::types::Candidate`) and as the
/// core's `Host` takes it; so has the answer. Every adapter between the
/// core and the bindings expands its arms from this, so wiring a
/// capability in is the WIT, the core's `Call` and `Host`, and its stage.
#[macro_export]
macro_rules! wit_capabilities {
    ($callback:ident) => {
        $callback! {
            sources {
                retrieve Retrieve [RetrieveRequest] (context) { query: str [String] [&str], limit: copy [u32] [u32] } -> [Vec<imports::types::Candidate>] [Vec<::ctxpack_core::Candidate>];
                expand_graph ExpandGraph [ExpandGraphRequest] (context) { item_ids: strs [Vec<String>] [&[String]], depth: copy [u32] [u32] } -> [Vec<imports::types::Candidate>] [Vec<::ctxpack_core::Candidate>];
                recall_memory RecallMemory [RecallMemoryRequest] (context) { user_id: str [String] [&str], query: str [String] [&str], limit: copy [u32] [u32] } -> [Vec<imports::types::Candidate>] [Vec<::ctxpack_core::Candidate>];
                repository_state RepositoryState [] (context) {} -> [Vec<imports::types::Candidate>] [Vec<::ctxpack_core::Candidate>];
            }
            policy {
                review Review [ReviewRequest] (context) { items: candidates [Vec<imports::types::Candidate>] [&[&::ctxpack_core::Candidate]] } -> [Vec<imports::policy::Verdict>] [Vec<::ctxpack_core::Verdict>];
            }
            summarizer {
                summarize Summarize [SummarizeRequest] () { requests: records [Vec<imports::types::SummaryRequest>] [&[::ctxpack_core::SummaryRequest]], tokenizer: value [imports::types::Tokenizer] [::ctxpack_core::Tokenizer] } -> [Vec<String>] [Vec<String>];
            }
            counter {
                count_tokens CountTokens [CountTokensRequest] () { tokenizer: str [String] [&str], texts: strs [Vec<String>] [&[String]] } -> [Vec<u32>] [Vec<u32>];
                count_messages CountMessages [CountMessagesRequest] () { tokenizer: str [String] [&str], lists: records [Vec<imports::types::MessageList>] [&[::ctxpack_core::MessageList]] } -> [Vec<u32>] [Vec<u32>];
                split_text SplitText [SplitTextRequest] () { texts: strs [Vec<String>] [&[String]] } -> [Vec<imports::types::TextPieces>] [Vec<::ctxpack_core::TextPieces>];
            }
        }
    };
}

/// Both directions between the core's `Answer` and the step protocol's
/// `answer` variant, one case per kind of answer, for a module that
/// names the core `ctx` and the builder's bindings `exported`.
#[macro_export]
macro_rules! wit_answers {
    () => {
        $crate::__cases!(ctx::Answer, exported::Answer, [] [Candidates, Verdicts, Summaries, Counts, Splits]);
    };
}
