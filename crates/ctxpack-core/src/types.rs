//! What an application and its host hand ctxpack: the request, its
//! conversation, the host's candidates and the vocabulary they share
//! (tokenizers, layers, sections, trust tiers, roles). Mirrored one to one
//! in `wit/types.wit`; what an assembly gives back is in [`crate::pack`].
//!
//! They serialise to JSON with the WIT names (kebab-case), so a scenario file
//! reads like the contract. Requests reject unknown fields, so a misspelt key
//! is an error naming it instead of a silently ignored setting.

use serde::{Deserialize, Serialize};

/// Who and what an assembly is for.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct AgentContext {
    /// Conversation session; the pack id derives from it.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Trace id, copied through; empty when left out.
    #[serde(default)]
    pub trace_id: String,
    /// End user; long-term memory is recalled only when present.
    #[serde(default)]
    pub user_id: Option<String>,
    /// Tenant.
    #[serde(default)]
    pub tenant_id: Option<String>,
    /// Project within the tenant.
    #[serde(default)]
    pub project_id: Option<String>,
    /// Run within the project.
    #[serde(default)]
    pub run_id: Option<String>,
    /// Attempt within the run.
    #[serde(default)]
    pub attempt_id: Option<String>,
    /// Scopes the attempt may read.
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// How text is turned into tokens.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tokenizer {
    /// Exact `o200k_base` counts.
    O200kBase,
    /// Exact `cl100k_base` counts.
    Cl100kBase,
    /// One token per this many characters, rounded up (an estimate).
    CharsPerToken(u32),
    /// Exact counts with a tokenizer file the builder was given
    /// ([`crate::BuilderConfig::tokenizers`]), by its name.
    Named(String),
    /// Counted by the host's `counter.count-tokens`, which is given this
    /// name (the model's, `claude-sonnet-4-5`) with the texts to count:
    /// for a model whose tokenizer is not public, or a function of the
    /// user's. Exact as the host's counts are, which are taken as they
    /// are (see [`crate::Host::count_tokens`]).
    Host(String),
}

/// A layer of the pack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layer {
    /// Never dropped, charged first.
    L0,
    /// Recent working state.
    L1,
    /// Long-term and retrieved.
    L2,
}

/// A section of the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Section {
    /// System prompt (L0).
    SystemPrompt,
    /// Workflow status (L0).
    WorkflowStatus,
    /// Mandatory instructions (L0).
    MandatoryInstructions,
    /// Current task (L0).
    CurrentTask,
    /// Conversation turns (L1).
    ConversationState,
    /// The change under work (L1).
    CurrentDiff,
    /// Tool results outside the conversation (L1).
    ToolResults,
    /// Repository state (L2).
    RepositoryState,
    /// Retrieved knowledge (L2).
    RelevantKnowledge,
    /// Graph expansion (L2).
    GraphNeighbours,
    /// Long-term memory (L2).
    EpisodicMemory,
    /// Anything else (L2).
    SupportingContext,
    /// Completed stage summaries (L2).
    StageSummaries,
}

impl Section {
    /// The layer the section belongs to.
    pub fn layer(self) -> Layer {
        match self {
            Section::SystemPrompt
            | Section::WorkflowStatus
            | Section::MandatoryInstructions
            | Section::CurrentTask => Layer::L0,
            Section::ConversationState | Section::CurrentDiff | Section::ToolResults => Layer::L1,
            Section::RepositoryState
            | Section::RelevantKnowledge
            | Section::GraphNeighbours
            | Section::EpisodicMemory
            | Section::SupportingContext
            | Section::StageSummaries => Layer::L2,
        }
    }
}

/// How far a text may be trusted, most trusted first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TrustTier {
    /// Written by the operator.
    System,
    /// First-party data the application vouches for.
    Trusted,
    /// Known origin, unreviewed.
    Unverified,
    /// From outside; fenced when rendered (see the `fence` module), never
    /// in L0.
    Untrusted,
}

/// Where a candidate came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Provenance {
    /// Kind of source.
    pub source_kind: String,
    /// The id the candidate cites.
    pub reference: String,
    /// Version of the source document.
    #[serde(default)]
    pub source_version: Option<String>,
    /// Index revision it was retrieved from.
    #[serde(default)]
    pub index_revision: Option<String>,
}

/// Role of a conversation turn or pack entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// System message.
    System,
    /// End user.
    User,
    /// The model.
    Assistant,
    /// A tool result.
    Tool,
}

impl Role {
    /// The lowercase name used in rendered text.
    pub fn name(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One conversation turn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ConversationTurn {
    /// Who spoke.
    pub role: Role,
    /// What was said.
    pub content: String,
    /// The tool call this turn makes (assistant) or answers (tool).
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// Tokens of what it sends beside its text (its images), charged with
    /// it where it is sent as a message. Not written when absent, so a
    /// request's digest is what it was before the field existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attached_tokens: Option<u32>,
}

/// The workflow's status.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct WorkflowStatus {
    /// Status word.
    pub status: String,
    /// Current stage.
    #[serde(default)]
    pub stage_id: Option<String>,
}

/// A completed stage's summary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct StageSummary {
    /// Stage id.
    pub stage_id: String,
    /// How it ended.
    pub outcome: String,
    /// What it did.
    pub summary: String,
}

/// An item a host source returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Candidate {
    /// Stable id, unique within one assembly.
    pub id: String,
    /// Section it is for.
    pub section: Section,
    /// The text.
    pub text: String,
    /// Where it came from.
    #[serde(default)]
    pub provenance: Option<Provenance>,
    /// Trust tier.
    pub trust: TrustTier,
    /// The source's relevance score.
    #[serde(default)]
    pub score: Option<f64>,
    /// Order of creation, higher is newer.
    #[serde(default)]
    pub sequence: Option<u64>,
    /// Scope it belongs to.
    #[serde(default)]
    pub scope: Option<String>,
    /// The tokens of `text` in the request's tokenizer, if the host already
    /// has them: used as given, without recounting, while the text is
    /// rendered unchanged (a redaction, or a text in which a spelling of
    /// the fence's markers had to be defused, is counted). A wrong count
    /// makes the budget wrong by as much.
    #[serde(default)]
    pub token_count: Option<u32>,
}

/// Which turn a kept conversation may begin with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConversationStart {
    /// A user turn: kept turns before the first kept user turn are left
    /// out (`before-user-turn`), as chat APIs need.
    #[default]
    UserTurn,
    /// Any turn: the budget alone decides.
    AnyTurn,
}

/// The form the caller sends the pack in, which the budget is exact for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PackForm {
    /// The flat text: its tokens, no entry overhead.
    Text,
    /// The messages: each message's content plus the entry overhead once
    /// per message; no `[role]` header and no join between messages.
    Messages,
}

/// The order a pack is laid out in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// L0, then the other context, then the conversation.
    ContextFirst,
    /// What stays across turns first, so a provider's prompt cache serves
    /// it: L0 but the current task and the workflow's status, then the
    /// conversation but its newest user turn; then what changes every
    /// turn: the other context, the current task and the workflow's
    /// status, and the newest user turn last.
    CacheFirst,
}

impl Layout {
    /// Whether an L0 entry of `section` renders after the conversation
    /// when laid out cache-first: it changes from turn to turn.
    pub(crate) fn moves(section: Section) -> bool {
        matches!(section, Section::CurrentTask | Section::WorkflowStatus)
    }

    /// The layout `request` asks for: when it names none, cache-first for
    /// the messages form and context-first otherwise.
    pub fn of(request: &AssembleRequest) -> Layout {
        request.layout.unwrap_or(match request.form {
            Some(PackForm::Messages) => Layout::CacheFirst,
            _ => Layout::ContextFirst,
        })
    }
}

/// `keep-last` when a request leaves it out: every turn is considered, and
/// the budget alone decides which of the oldest give way.
pub const KEEP_EVERY_TURN: u32 = u32::MAX;

fn keep_every_turn() -> u32 {
    KEEP_EVERY_TURN
}

/// What an application asks to be packed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct AssembleRequest {
    /// Who and what the assembly is for; every field's default when left
    /// out (a library's caller that has no trace, tenant or session).
    #[serde(default)]
    pub context: AgentContext,
    /// The raw query; empty when left out (a plain trim has none).
    #[serde(default)]
    pub query: String,
    /// The model the pack is for, by name (see [`crate::ModelProfile`]):
    /// what the request leaves out of the tokenizer, the budget and the
    /// entry overhead is taken from its profile. Not written when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The tokenizer the budget is counted in; the model's when left out
    /// (one of the two is required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<Tokenizer>,
    /// Most tokens the pack may hold; when left out, the model's window
    /// less its output reserve, or else the plan's default budget (the
    /// snapshot records the budget used).
    #[serde(default)]
    pub budget: Option<u32>,
    /// Tokens charged on top of each included entry; when left out, the
    /// model's message overhead, or else 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_overhead: Option<u32>,
    /// Tokens charged once for a pack sent as messages (the reply's
    /// priming); when left out, the model's reply overhead, or else 0. Not
    /// written when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_overhead: Option<u32>,
    /// System prompt (L0); empty when left out.
    #[serde(default)]
    pub system_prompt: String,
    /// Workflow status (L0).
    #[serde(default)]
    pub workflow: Option<WorkflowStatus>,
    /// Mandatory instructions (L0).
    #[serde(default)]
    pub instructions: Vec<String>,
    /// Current task (L0).
    #[serde(default)]
    pub current_task: Option<String>,
    /// Conversation, oldest first (L1).
    #[serde(default)]
    pub conversation: Vec<ConversationTurn>,
    /// The conversation as chat messages in a provider's shape, instead of
    /// `conversation` (see [`Chat`] and the `chat` module): read into its
    /// turns, charged as the provider is sent them, and given back as the
    /// pack's [`crate::ChatRequest`]. A request that carries it is sent
    /// as messages, cache-first, unless it says otherwise. Not written
    /// when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<Chat>,
    /// How many of the newest turns are considered; every turn when left
    /// out ([`KEEP_EVERY_TURN`]).
    #[serde(default = "keep_every_turn")]
    pub keep_last: u32,
    /// Which turn the kept conversation may begin with; a user turn when
    /// left out. Not written when absent, so a request's digest (a failed
    /// snapshot's id) is what it was before the field existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_start: Option<ConversationStart>,
    /// The form the caller sends, which the budget is exact for; when
    /// left out, either (the budget holds for both). Not written when
    /// absent, for the same reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<PackForm>,
    /// The order the pack is laid out in; when left out, cache-first for
    /// the messages form, context-first otherwise. Not written when
    /// absent, for the same reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<Layout>,
    /// Stage summaries, oldest first (L2).
    #[serde(default)]
    pub stage_summaries: Vec<StageSummary>,
    /// The conversation as the previous turn's pack compacted it (see
    /// [`Compaction`]); none yet when absent. Not written when absent, as
    /// `layout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<Compaction>,
}

impl Default for AssembleRequest {
    /// A request with nothing in it: no model, tokenizer or budget, every
    /// turn considered (as the JSON face reads `{}`).
    fn default() -> Self {
        AssembleRequest {
            context: AgentContext::default(),
            query: String::new(),
            model: None,
            tokenizer: None,
            budget: None,
            entry_overhead: None,
            reply_overhead: None,
            system_prompt: String::new(),
            workflow: None,
            instructions: Vec::new(),
            current_task: None,
            conversation: Vec::new(),
            chat: None,
            keep_last: KEEP_EVERY_TURN,
            conversation_start: None,
            form: None,
            layout: None,
            stage_summaries: Vec::new(),
            compaction: None,
        }
    }
}

/// A conversation compacted (see `plan.compact-share`): what a pack
/// returns for the next turn's request to pass back, so the summary's
/// bytes stay as they are until the conversation is compacted again.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Compaction {
    /// The summary of the conversation's first `turns` turns, sent as a
    /// system turn of its own in the place of the last of them.
    pub summary: String,
    /// How many of the conversation's first turns the summary stands for
    /// (0: none); never inside a tool call's run of turns.
    pub turns: u32,
    /// The tool results before this turn are sent as a placeholder, their
    /// calls as they were.
    pub cleared: u32,
    /// The hash of the turns it stands for and clears (the first
    /// `max(turns, cleared)`, see `compaction_hash`): a compaction passed
    /// back with another conversation, or with turns left out at its
    /// start, is refused.
    pub hash: String,
}

/// One text to summarise.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct SummaryRequest {
    /// The section the summary is for.
    pub section: Section,
    /// The text.
    pub text: String,
    /// Most tokens the summary may have.
    pub target_tokens: u32,
}

/// A model a request can name: the values a request that names it
/// assumes where it gives none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ModelProfile {
    /// Its name, as a request gives it (matched without regard to case,
    /// after any `owner/`; a dated name, `gpt-4o-2024-08-06`, finds
    /// `gpt-4o`).
    pub name: String,
    /// The tokenizer its budget is counted in.
    pub tokenizer: Tokenizer,
    /// Its context window: the most tokens its prompt and its answer
    /// together may hold.
    pub context_window: u32,
    /// Tokens kept for its answer: a request that gives no budget gets the
    /// window less this (and never more than the plan's window limit).
    pub output_reserve: u32,
    /// Tokens its chat format adds to each message (the role's header and
    /// the end-of-turn marker): the entry overhead of a request that gives
    /// none.
    pub message_overhead: u32,
    /// Tokens its chat format adds once to a request sent as messages, to
    /// prime the reply: the reply overhead of a request that gives none
    /// (0 when left out).
    #[serde(default)]
    pub reply_overhead: u32,
    /// The fewest tokens of a prompt's prefix its provider's prompt cache
    /// keeps: a pack's prefix is cacheable from there (see
    /// [`crate::CachePrefix`]). None where no provider cache is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_min_tokens: Option<u32>,
    /// How its provider bills an image in a message; none where it is not
    /// known (a chat with an image is then refused). Not written when
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<ImageRule>,
}

/// A provider's published rule for what an image in a message costs (see
/// the `chat` module's images).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ImageRule {
    /// OpenAI's 512-pixel tiles: `detail: low` costs the base; any other
    /// image is fitted within 2048×2048, its short side brought to at most
    /// 768, and costs the base and the tile price per tile.
    Tiles(ImageTiles),
    /// OpenAI's 32-pixel patches, at most 1,536, times this multiplier,
    /// rounded up.
    Patches(f64),
    /// Anthropic's: width × height / 750 once the long side is within
    /// 1,568 pixels, rounded up, at most 1,600.
    Pixels,
    /// Gemini's: 258 within 384×384, else 258 per 768-pixel tile.
    GeminiTiles,
    /// The model takes no images.
    None,
}

impl Eq for ImageRule {}

/// The prices of OpenAI's tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ImageTiles {
    /// What any image costs.
    pub base: u32,
    /// What each 512-pixel tile adds.
    pub tile: u32,
}

/// The shape a provider's API gives chat messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChatShape {
    /// OpenAI's Chat Completions `messages`.
    OpenaiChat,
    /// OpenAI's Responses `input` items.
    OpenaiResponses,
    /// Anthropic's Messages `messages` (and `system`).
    Anthropic,
    /// Gemini's `contents` (and `systemInstruction`).
    Gemini,
}

impl ChatShape {
    /// The name of the body's list of messages in this shape.
    pub fn list_name(self) -> &'static str {
        match self {
            ChatShape::OpenaiChat | ChatShape::Anthropic => "messages",
            ChatShape::OpenaiResponses => "input",
            ChatShape::Gemini => "contents",
        }
    }
}

/// Chat messages as a provider's API takes them (see
/// [`AssembleRequest::chat`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Chat {
    /// The shape they are in.
    pub shape: ChatShape,
    /// JSON text: the list of messages, or an object holding it under its
    /// name (`messages`, `input`, `contents`) with the system text beside
    /// it (`system`, `instructions`, `systemInstruction`). In JSON it may
    /// also be given as the value itself (a scenario file's), read as its
    /// text (keys in order of their names).
    #[serde(deserialize_with = "json_text")]
    pub messages: String,
}

/// A JSON text given as a string, or as the JSON value it holds.
fn json_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(text) => Ok(text),
        value => Ok(value.to_string()),
    }
}

impl Chat {
    /// `messages` (a JSON value: the list, or an object holding it) in
    /// `shape`.
    pub fn new(shape: ChatShape, messages: &serde_json::Value) -> Self {
        Chat {
            shape,
            messages: messages.to_string(),
        }
    }
}

/// A request field whose value was taken from the model's profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Assumed {
    /// The profile's tokenizer.
    Tokenizer,
    /// The window less the output reserve (or the plan's window limit).
    Budget,
    /// The profile's message overhead.
    EntryOverhead,
    /// The profile's reply overhead.
    ReplyOverhead,
}

/// The model a snapshot's request named: its profile, and what was taken
/// from it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ModelUse {
    /// The profile, as it was when the pack was assembled.
    pub profile: ModelProfile,
    /// The request's fields taken from it, in this order: tokenizer,
    /// budget, entry overhead.
    pub assumed: Vec<Assumed>,
}

/// Which messages a trim keeps (LangChain's `strategy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TrimStrategy {
    /// The newest that fit.
    #[default]
    Last,
    /// The oldest that fit.
    First,
}

/// How a message is cut where a trim keeps part of one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TextSplit {
    /// At line breaks, each line with its break.
    #[default]
    Lines,
    /// As the host's `counter.split-text` splits it.
    Host,
}

/// A chat's messages trimmed to a budget (see the module).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct TrimRequest {
    /// The messages.
    pub chat: Chat,
    /// The most tokens the kept messages may count.
    pub max_tokens: u32,
    /// The model whose tokenizer and chat format count.
    #[serde(default)]
    pub model: Option<String>,
    /// The tokenizer; the model's when left out; `host` counts lists with
    /// the host's counter of messages.
    #[serde(default)]
    pub tokenizer: Option<Tokenizer>,
    /// Tokens of each message's framing; the model's when left out.
    #[serde(default)]
    pub entry_overhead: Option<u32>,
    /// Tokens that prime the reply; the model's when left out.
    #[serde(default)]
    pub reply_overhead: Option<u32>,
    /// Which messages to keep.
    #[serde(default)]
    pub strategy: TrimStrategy,
    /// With `last`, the leading system messages are kept whatever else is.
    #[serde(default)]
    pub include_system: bool,
    /// With `last`, the kept messages begin with one of these roles.
    #[serde(default)]
    pub start_on: Vec<Role>,
    /// The kept messages end with one of these roles.
    #[serde(default)]
    pub end_on: Vec<Role>,
    /// Whether the next message that does not fit whole is cut to fit.
    #[serde(default)]
    pub allow_partial: bool,
    /// How its text is split.
    #[serde(default)]
    pub split: TextSplit,
}

/// A run of a content's blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct BlockRange {
    /// The first block's index.
    pub first: u32,
    /// How many.
    pub count: u32,
}

/// A message cut to fit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Partial {
    /// Its index in the chat's messages.
    pub message: u32,
    /// The blocks of its list content it keeps, where whole blocks were.
    pub blocks: Option<BlockRange>,
    /// The text it holds instead of its content, where its text was cut.
    pub text: Option<String>,
}

/// A list of a trim's messages, counted as one request: the chat's
/// messages at `messages` and the `cut` one, each at its place in the
/// chat's order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct MessageList {
    /// The indices of the messages given whole, ascending.
    pub messages: Vec<u32>,
    /// A message cut to fit, at its index's place.
    #[serde(default)]
    pub cut: Option<Partial>,
}

/// A text split into the pieces a cut message may keep.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct TextPieces {
    /// The pieces, in order.
    pub pieces: Vec<String>,
}

/// What a trim kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Trimmed {
    /// The indices of the chat's messages kept, in order.
    pub kept: Vec<u32>,
    /// The message cut to fit, if one was.
    pub partial: Option<Partial>,
    /// The kept messages as JSON text, a list in the chat's shape.
    pub messages: String,
    /// The kept messages as their request counts.
    pub tokens: u64,
}
