"""The WIT's types as Python classes. Written by `cargo run -p ctxpack-codegen`
from `wit/*.wit`: do not edit."""

from __future__ import annotations

import enum
import json as _json
from dataclasses import dataclass, field
from typing import Any, List, Literal, Optional, Union

from ._codec import UNSET, LazyList, Variant, Record, register


@dataclass(kw_only=True, slots=True)
class AgentContext(Record):
    """Who and what an assembly is for. Every id is opaque to ctxpack; it only copies them into the pack and the snapshot, and uses `scopes` to decide which candidates an attempt may see."""
    session_id: Optional[str] = None
    """Conversation session; the pack id derives from it ("unknown" when absent)."""
    trace_id: str = UNSET
    """Trace id of the request, copied through for the host's telemetry (in JSON, empty when left out)."""
    user_id: Optional[str] = None
    """End user; long-term memory is recalled only when it is present."""
    tenant_id: Optional[str] = None
    """Tenant the request belongs to."""
    project_id: Optional[str] = None
    """Project within the tenant."""
    run_id: Optional[str] = None
    """Run (one task execution) within the project."""
    attempt_id: Optional[str] = None
    """Attempt within the run; a changed plan or budget is a new attempt."""
    scopes: List[str] = field(default_factory=list)
    """Scopes the attempt may read; a candidate outside them is never included."""


class Tokenizer(Variant):
    """How text is turned into tokens. A budget is always counted in the tokens of the tokenizer the request names."""

    @classmethod
    def o200k_base(cls) -> "Tokenizer":
        """Exact counts with the `o200k_base` encoding (GPT-4o family)."""
        return cls("o200k-base")

    @classmethod
    def cl100k_base(cls) -> "Tokenizer":
        """Exact counts with the `cl100k_base` encoding (GPT-4 / GPT-3.5 family)."""
        return cls("cl100k-base")

    @classmethod
    def chars_per_token(cls, value: int) -> "Tokenizer":
        """A cheap estimate: one token per this many characters (Unicode scalar values), rounded up. Must be at least 1."""
        return cls("chars-per-token", value)

    @classmethod
    def named(cls, value: str) -> "Tokenizer":
        """Exact counts with a tokenizer file the builder was given (`builder-config.tokenizers`), by the name it was given under."""
        return cls("named", value)

    @classmethod
    def host(cls, value: str) -> "Tokenizer":
        """Counted by the host's `counter.count-tokens`, which is given this name (the model's: `claude-sonnet-4-5`) with the texts."""
        return cls("host", value)


@dataclass(kw_only=True, slots=True)
class ModelProfile(Record):
    """A model a request can name (`assemble-request.model`): the values a request that names it takes where it gives none."""
    name: str
    """Its name. A request's is matched without regard to case, after any `owner/`; a dated name (`gpt-4o-2024-08-06`) finds the undated one."""
    tokenizer: Union["Tokenizer", Literal["o200k-base", "cl100k-base"]]
    """The tokenizer its budget is counted in."""
    context_window: int
    """Its context window: the most tokens its prompt and its answer together may hold."""
    output_reserve: int
    """Tokens kept for its answer: a request that gives no budget gets the window less this. Less than the window."""
    message_overhead: int
    """Tokens its chat format adds to each message (the role's header and the end-of-turn marker; OpenAI's 3 and the role's token): the entry overhead of a request that gives none."""
    reply_overhead: int = UNSET
    """Tokens its chat format adds once to a request sent as messages, to prime the reply (OpenAI's 3, Llama 3's 5): the reply overhead of a request that gives none (in JSON, 0 when left out)."""
    cache_min_tokens: Optional[int] = None
    """The fewest tokens of a prompt's prefix its provider's prompt cache keeps (OpenAI 1,024; Claude 1,024 to 4,096 by model; Gemini 1,024 or 4,096): a pack's prefix is `cacheable` from there (see `cache-prefix`). None where no provider cache is known (a model one serves oneself)."""
    images: Optional[Union["ImageRule", Literal["pixels", "gemini-tiles", "none"]]] = None
    """How its provider bills an image in a message: a chat's images are charged with their message by it. None where it is not known: a chat with an image is then refused, naming it."""


class ImageRule(Variant):
    """A provider's published rule for what an image in a message costs. An image's size is read from its bytes (PNG, JPEG, GIF, WebP, sent inline as base64); one given by URL, whose size is not known, is charged the most the rule lets an image cost, and the snapshot's `chat.bounded` says so."""

    @classmethod
    def tiles(cls, value: "ImageTiles") -> "ImageRule":
        """OpenAI's tiles (GPT-4o, GPT-4.1, GPT-5, o1, o3): an image with `detail: low` costs the base; any other is fitted within 2048×2048, scaled down so its short side is at most 768, and costs the base and the tile price for each 512-pixel tile."""
        return cls("tiles", value)

    @classmethod
    def patches(cls, value: float) -> "ImageRule":
        """OpenAI's patches (GPT-4.1 mini and nano, GPT-5 mini and nano, o4-mini): one token for each 32-pixel patch that covers the image scaled to at most 1,536 patches, times this multiplier, rounded up."""
        return cls("patches", value)

    @classmethod
    def pixels(cls) -> "ImageRule":
        """Anthropic's: width × height / 750 once the long side is fitted within 1,568 pixels, rounded up, at most 1,600."""
        return cls("pixels")

    @classmethod
    def gemini_tiles(cls) -> "ImageRule":
        """Gemini's: 258 for an image within 384×384, else 258 for each 768-pixel tile that covers it."""
        return cls("gemini-tiles")

    @classmethod
    def none(cls) -> "ImageRule":
        """The model takes no images: a chat with one is refused."""
        return cls("none")


@dataclass(kw_only=True, slots=True)
class ImageTiles(Record):
    """The prices of OpenAI's tiles."""
    base: int
    """What any image costs."""
    tile: int
    """What each 512-pixel tile adds."""


class Assumed(str, enum.Enum):
    """A request's field whose value was taken from its model's profile."""
    TOKENIZER = "tokenizer"
    BUDGET = "budget"
    ENTRY_OVERHEAD = "entry-overhead"
    REPLY_OVERHEAD = "reply-overhead"


@dataclass(kw_only=True, slots=True)
class ModelUse(Record):
    """The model a request named: its profile, and what was taken from it."""
    profile: "ModelProfile"
    """The profile, as it was when the pack was assembled."""
    assumed: List["Assumed"]
    """The request's fields taken from it, in the order tokenizer, budget, entry overhead, reply overhead."""


@dataclass(kw_only=True, slots=True)
class TokenizerFile(Record):
    """A tokenizer file the model ships, read once when the builder is created: a Hugging Face `tokenizer.json` with a BPE model, byte-level (Llama 3.x, Qwen 2.5 and 3, DeepSeek V3, Phi-4, ...) or SentencePiece-style (Gemma 3), Mistral's `tekken.json`, or a tiktoken rank file. Counts equal the file's reference implementation; a file the counting does not follow (another model, a normalizer, an unknown pattern) is refused, naming what."""
    name: str
    """The name requests count with it under (`tokenizer.named`)."""
    text: str
    """The file's text (each kind is UTF-8 text)."""
    pattern: Optional[str] = None
    """A tiktoken rank file's pattern, which the file does not name: `o200k`, `cl100k`, `llama3`, `qwen`, `qwen3.5`, `tekken`, or its regular expression. None for the JSON files, which carry theirs."""


class Layer(str, enum.Enum):
    """The three layers of a pack, in the order they give way under pressure (L2 first, then L1; L0 never)."""
    L0 = "l0"
    L1 = "l1"
    L2 = "l2"


class Section(str, enum.Enum):
    """The sections a pack is planned in. Each belongs to exactly one layer."""
    SYSTEM_PROMPT = "system-prompt"
    WORKFLOW_STATUS = "workflow-status"
    MANDATORY_INSTRUCTIONS = "mandatory-instructions"
    CURRENT_TASK = "current-task"
    CONVERSATION_STATE = "conversation-state"
    CURRENT_DIFF = "current-diff"
    TOOL_RESULTS = "tool-results"
    REPOSITORY_STATE = "repository-state"
    RELEVANT_KNOWLEDGE = "relevant-knowledge"
    GRAPH_NEIGHBOURS = "graph-neighbours"
    EPISODIC_MEMORY = "episodic-memory"
    SUPPORTING_CONTEXT = "supporting-context"
    STAGE_SUMMARIES = "stage-summaries"


class TrustTier(str, enum.Enum):
    """How far a candidate's text may be trusted, most trusted first."""
    SYSTEM = "system"
    TRUSTED = "trusted"
    UNVERIFIED = "unverified"
    UNTRUSTED = "untrusted"


@dataclass(kw_only=True, slots=True)
class Provenance(Record):
    """Where a candidate came from. A candidate without provenance is never included."""
    source_kind: str
    """Kind of source: "chunk", "fact", "memory", "artifact", "request", ..."""
    reference: str
    """The chunk, fact, memory or artifact id the candidate cites."""
    source_version: Optional[str] = None
    """Version of the source document, when the source has versions."""
    index_revision: Optional[str] = None
    """Revision of the index the candidate was retrieved from."""


class Role(str, enum.Enum):
    """Role of a conversation turn."""
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


@dataclass(kw_only=True, slots=True)
class ConversationTurn(Record):
    """One turn of the conversation, oldest first in a request."""
    role: Union["Role", Literal["system", "user", "assistant", "tool"]]
    """Who spoke."""
    content: str
    """What was said."""
    tool_call_id: Optional[str] = None
    """On an assistant turn, the id of the tool call it makes; on a tool turn, the id of the call it answers. Turns that share an id are kept or dropped together."""
    attached_tokens: Optional[int] = None
    """Tokens of what the turn sends beside its text — its images, at what its model's provider bills for them — charged with it where it is sent as a message (the flat text carries no image)."""


class ConversationStart(str, enum.Enum):
    """Which turn a kept conversation may begin with."""
    USER_TURN = "user-turn"
    ANY_TURN = "any-turn"


class PackForm(str, enum.Enum):
    """The form the caller sends the pack in, which the budget is exact for."""
    TEXT = "text"
    MESSAGES = "messages"


class Layout(str, enum.Enum):
    """The order a pack is laid out in."""
    CONTEXT_FIRST = "context-first"
    CACHE_FIRST = "cache-first"


@dataclass(kw_only=True, slots=True)
class WorkflowStatus(Record):
    """The status of the workflow the request is part of."""
    status: str
    """Status word, e.g. "running"."""
    stage_id: Optional[str] = None
    """The current stage, if any ("none" is rendered otherwise)."""


@dataclass(kw_only=True, slots=True)
class StageSummary(Record):
    """The summary of one completed workflow stage, oldest first in a request."""
    stage_id: str
    """Stage id."""
    outcome: str
    """How the stage ended, e.g. "succeeded"."""
    summary: str
    """What the stage did."""


@dataclass(kw_only=True, slots=True)
class Candidate(Record):
    """An item that may go into the context, as a host source returns it."""
    id: str
    """Stable id, unique within one assembly."""
    section: Union["Section", Literal["system-prompt", "workflow-status", "mandatory-instructions", "current-task", "conversation-state", "current-diff", "tool-results", "repository-state", "relevant-knowledge", "graph-neighbours", "episodic-memory", "supporting-context", "stage-summaries"]]
    """Section the item is for."""
    text: str
    """The text."""
    provenance: Optional["Provenance"] = None
    """Where it came from; required for inclusion."""
    trust: Union["TrustTier", Literal["system", "trusted", "unverified", "untrusted"]]
    """How far it may be trusted."""
    score: Optional[float] = None
    """The source's relevance score (higher is better), if it has one."""
    sequence: Optional[int] = None
    """Order of creation (higher is newer), for recency and eviction."""
    scope: Optional[str] = None
    """Scope the item belongs to; checked against the attempt's scopes."""
    token_count: Optional[int] = None
    """The tokens of `text` in the request's tokenizer, if the host already has them: used as given, without recounting, while the text is rendered unchanged (a redacted text, or one in which a spelling of the fence's markers had to be defused, is counted). A wrong count makes the budget wrong by as much."""


@dataclass(kw_only=True, slots=True)
class AssembleRequest(Record):
    """What an application asks to be packed."""
    context: "AgentContext" = UNSET
    """Who and what the assembly is for (in JSON, every field's default when left out)."""
    query: str = UNSET
    """The user's query, raw (in JSON, empty when left out: a plain trim of a conversation has none)."""
    model: Optional[str] = None
    """The model the pack is for, by name (`gpt-4o`, `qwen3-8b`, `llama-3.1-8b-instruct`, or one of `builder-config.models`): what the request leaves out of `tokenizer`, `budget` and `entry-overhead` is taken from its profile, and the snapshot says what was."""
    tokenizer: Optional[Union["Tokenizer", Literal["o200k-base", "cl100k-base"]]] = None
    """The tokenizer whose tokens the budget is counted in; the model's when absent (one of the two is required)."""
    budget: Optional[int] = None
    """Most tokens the pack may hold, counted per entry. When absent: the model's window less its output reserve (within the plan's safety margin), else the plan's default budget (the snapshot records the one used)."""
    entry_overhead: Optional[int] = None
    """Tokens charged on top of each included entry for the message framing of the model's API (0 for a flat prompt). When absent: the model's message overhead, else 0."""
    reply_overhead: Optional[int] = None
    """Tokens charged once for a pack sent as messages, as the model's chat format primes its reply (OpenAI's 3). When absent: the model's reply overhead, else 0."""
    system_prompt: str = UNSET
    """The system prompt (L0; in JSON, empty when left out)."""
    workflow: Optional["WorkflowStatus"] = None
    """The workflow's status (L0), rendered "Status: <status>, Stage: <stage or none>"."""
    instructions: List[str] = field(default_factory=list)
    """Mandatory instructions (L0), never truncated."""
    current_task: Optional[str] = None
    """The current task (L0), never truncated."""
    conversation: List["ConversationTurn"] = field(default_factory=list)
    """The conversation, oldest turn first (L1)."""
    chat: Optional["Chat"] = None
    """The conversation as chat messages in a provider's shape, instead of `conversation` (give one of the two): read into its turns — each message one turn with its parts, its tool calls and results, kept or dropped together —, charged as the provider is sent them, and given back in `context-pack.chat` as the request to send, the kept messages unchanged. Its system text (a system field, or the system messages that lead it) is the system prompt, after the request's own. A request that carries it is sent as messages, cache-first, unless it says otherwise."""
    keep_last: int = UNSET
    """At most this many of the newest turns are considered (in JSON, every turn when left out: 4294967295, and the budget alone decides which of the oldest give way)."""
    conversation_start: Optional[Union["ConversationStart", Literal["user-turn", "any-turn"]]] = None
    """Which turn the kept conversation may begin with; `user-turn` when absent."""
    form: Optional[Union["PackForm", Literal["text", "messages"]]] = None
    """The form the caller sends: the budget is exact for it. When absent, either: the budget holds for both the flat text and the messages, each entry charged the entry overhead."""
    layout: Optional[Union["Layout", Literal["context-first", "cache-first"]]] = None
    """The order the pack is laid out in; when absent, cache-first for the messages form, context-first otherwise."""
    stage_summaries: List["StageSummary"] = field(default_factory=list)
    """Summaries of completed stages, oldest first (L2)."""
    compaction: Optional["Compaction"] = None
    """The conversation as the previous turn's pack compacted it (its `compaction`, passed back): its first turns stand as their summary, and its tool results before `cleared` as a placeholder. When absent, nothing is compacted yet."""


class ChatShape(str, enum.Enum):
    """The shape a provider's API gives chat messages."""
    OPENAI_CHAT = "openai-chat"
    OPENAI_RESPONSES = "openai-responses"
    ANTHROPIC = "anthropic"
    GEMINI = "gemini"


@dataclass(kw_only=True, slots=True)
class Chat(Record):
    """Chat messages as a provider's API takes them."""
    shape: Union["ChatShape", Literal["openai-chat", "openai-responses", "anthropic", "gemini"]]
    """The shape they are in."""
    messages: Any
    """JSON text: the list of messages (`messages`, `input` or `contents`), or an object holding that list under its name with the system text beside it (`system`, `systemInstruction`, `instructions`). Anything else is refused, naming it."""


@dataclass(kw_only=True, slots=True)
class CountRequest(Record):
    """What to count, and with what (`context-builder.count`)."""
    model: Optional[str] = None
    """The model whose tokenizer and chat format count (see `assemble-request.model`)."""
    tokenizer: Optional[Union["Tokenizer", Literal["o200k-base", "cl100k-base"]]] = None
    """The tokenizer; the model's when absent (one of the two is required). A host's (`host`) is refused: it counts for itself."""
    entry_overhead: Optional[int] = None
    """Tokens of each message's framing; the model's when absent, else 0."""
    reply_overhead: Optional[int] = None
    """Tokens that prime the reply, once for a chat; the model's when absent, else 0."""
    texts: List[str] = field(default_factory=list)
    """Texts, each counted alone (in JSON, none when left out)."""
    chat: Optional["Chat"] = None
    """A chat, counted as a request sends it, each turn as an assembly charges it."""


@dataclass(kw_only=True, slots=True)
class TokenCounts(Record):
    """What `count` counted."""
    tokenizer: Optional["Tokenizer"] = None
    """The tokenizer counted with."""
    model: Optional["ModelUse"] = None
    """The model named, and what was taken from its profile."""
    texts: List[int] = field(default_factory=list)
    """Each text's tokens, in order."""
    system: int = UNSET
    """The chat's system text as its message costs it, overhead included (0 without one)."""
    messages: List[int] = field(default_factory=list)
    """Each turn of the chat as sent: its overhead, its text and what it sends beside it (calls, ids, images)."""
    turns: List[int] = field(default_factory=list)
    """For each turn, the index in the chat's messages of its first."""
    total: int = UNSET
    """The chat as one request: the system message, every turn and the reply's priming."""


class TrimStrategy(str, enum.Enum):
    """How `trim` keeps messages: LangChain's `trim_messages` strategies."""
    LAST = "last"
    FIRST = "first"


class TextSplit(str, enum.Enum):
    """How a message is cut where `trim` keeps part of one (`allow-partial`)."""
    LINES = "lines"
    HOST = "host"


@dataclass(kw_only=True, slots=True)
class TrimRequest(Record):
    """A chat's messages trimmed to a budget, as LangChain's `trim_messages` trims them, but exactly, and never a tool call apart from its results."""
    chat: "Chat" = UNSET
    """The messages."""
    max_tokens: int = UNSET
    """The most tokens the kept messages may count, as a request of them counts (the reply's priming included)."""
    model: Optional[str] = None
    """The model whose tokenizer and chat format count (see `assemble-request.model`)."""
    tokenizer: Optional[Union["Tokenizer", Literal["o200k-base", "cl100k-base"]]] = None
    """The tokenizer; the model's when absent (one of the two is required). `host` counts each list of messages with the host's `counter.count-messages`, as the user's counter counts a list."""
    entry_overhead: Optional[int] = None
    """Tokens of each message's framing; the model's when absent, else 0 (not for a host's counter, which counts them)."""
    reply_overhead: Optional[int] = None
    """Tokens that prime the reply; the model's when absent, else 0 (likewise)."""
    strategy: Union["TrimStrategy", Literal["last", "first"]] = UNSET
    """Which messages to keep (in JSON, `last` when left out)."""
    include_system: bool = UNSET
    """With `last`, the system message that leads the chat is kept whatever else is."""
    start_on: List[Union["Role", Literal["system", "user", "assistant", "tool"]]] = field(default_factory=list)
    """With `last`, the kept messages begin with one of these roles (LangChain's `start_on`; none: any)."""
    end_on: List[Union["Role", Literal["system", "user", "assistant", "tool"]]] = field(default_factory=list)
    """The kept messages end with one of these roles (LangChain's `end_on`; none: any)."""
    allow_partial: bool = UNSET
    """Whether the next message that does not fit whole is cut to the room left (the newest end of it with `last`, the start with `first`): whole blocks of a list content first, then its text split (never a message of a tool call and its results)."""
    split: Union["TextSplit", Literal["lines", "host"]] = UNSET
    """How a text is split for `allow-partial` (in JSON, `lines`)."""


@dataclass(kw_only=True, slots=True)
class Partial(Record):
    """A message cut to fit (`allow-partial`)."""
    message: int = UNSET
    """Its index in the chat's messages."""
    blocks: Optional["BlockRange"] = None
    """The blocks of its list content it keeps: the first, and how many. None where its text was cut instead."""
    text: Optional[str] = None
    """The text it holds instead of its content: the splits kept, in order. None where whole blocks were kept."""


@dataclass(kw_only=True, slots=True)
class BlockRange(Record):
    """A run of a content's blocks."""
    first: int = UNSET
    """The first block's index."""
    count: int = UNSET
    """How many."""


@dataclass(kw_only=True, slots=True)
class MessageList(Record):
    """A list of a trim's messages, counted as one request: the chat's messages at these indices and the cut one, each at its place in the chat's order."""
    messages: List[int] = field(default_factory=list)
    """The indices of the messages given whole, ascending."""
    cut: Optional["Partial"] = None
    """A message cut to fit, at its index's place."""


@dataclass(kw_only=True, slots=True)
class TextPieces(Record):
    """A text split into the pieces a cut message may keep."""
    pieces: List[str] = field(default_factory=list)
    """The pieces, in order."""


@dataclass(kw_only=True, slots=True)
class Trimmed(Record):
    """What `trim` kept."""
    kept: List[int] = field(default_factory=list)
    """The indices of the chat's messages kept, in order (a cut one included)."""
    partial: Optional["Partial"] = None
    """The message cut to fit, if one was."""
    messages: str = UNSET
    """The kept messages as JSON text, a list in the chat's shape, each as given but the cut one."""
    tokens: int = UNSET
    """The kept messages as their request counts: the tokens checked against `max-tokens`."""


@dataclass(kw_only=True, slots=True)
class ChatRequest(Record):
    """What to send: a pack given back in the shape its chat came in."""
    shape: "ChatShape"
    """The shape, the chat's."""
    body: str
    """JSON text of the request's body but the model and its options: the system text (L0, in the shape's place for it), the kept messages in the pack's layout, each the caller's own unchanged but for a cache hint, and the other context as a message of the pack's. With the provider's cache hints: Anthropic's `cache_control` at the prefixes the next turn repeats (see `cache-prefix`, at most 4 breakpoints in all), OpenAI's `prompt_cache_key` (the pack's `cache-key`)."""
    sources: List[Optional[int]]
    """For each message of the body's list (`messages`, `input`, `contents`), the index in the chat's messages of the one it is, or none for a message the pack made."""

    def json(self) -> Any:
        """The body of the request to send, as the provider's SDK takes it: ``client.chat.completions.create(model=…, **pack.chat.json())``."""
        return _json.loads(self.body)


@dataclass(kw_only=True, slots=True)
class ChatReport(Record):
    """How a chat was read and charged."""
    shape: "ChatShape"
    """The shape it came in."""
    turns: List[int]
    """For each turn of the conversation (`turn-N`), the index in the chat's messages of its first message."""
    bounded: List[str]
    """Where a charge is an upper bound rather than exact, each naming its place and why (`messages[3].content[1]: an image given by URL, charged the most it can cost`)."""


@dataclass(kw_only=True, slots=True)
class Compaction(Record):
    """A conversation compacted: what a pack returns for the next turn's request to pass back, so the summary's bytes stay as they are until the conversation is compacted again (see `plan.compact-share`)."""
    summary: str
    """The summary of the conversation's first `turns` turns: sent as a system turn of its own in the place of the last of them."""
    turns: int
    """How many of the conversation's first turns the summary stands for (0: none; never inside a tool call's run of turns)."""
    cleared: int
    """The tool results before this turn are sent as a placeholder, their calls as they were."""
    hash: str
    """Hex SHA-256 of the turns it stands for and clears (the first `max(turns, cleared)`), each turn's role, tool-call id, attached tokens and content written as a cache prefix writes a message: passed back with another conversation, or with turns left out at its start, it is refused."""


@dataclass(kw_only=True, slots=True)
class PackEntry(Record):
    """One entry of an assembled pack."""
    id: str
    """Id of the candidate it came from (matches its snapshot entry)."""
    layer: "Layer"
    """Layer."""
    section: "Section"
    """Section."""
    role: "Role"
    """The role the entry takes in a message list."""
    text: str
    """The text exactly as charged and rendered."""
    tokens: int
    """Its tokens in the request's tokenizer (without the entry overhead)."""
    provenance: "Provenance"
    """Where it came from: the citation to show with it."""
    trust: "TrustTier"
    """How far it may be trusted."""


class Strategy(str, enum.Enum):
    """A strategy that removed something from a pack."""
    L0_IMMUTABLE = "l0-immutable"
    KEEP_LAST = "keep-last"
    CONVERSATION_BUDGET = "conversation-budget"
    EVICT_OLDEST = "evict-oldest"
    SUMMARIZE = "summarize"
    TRUNCATE = "truncate"


@dataclass(kw_only=True, slots=True)
class CompressionMetadata(Record):
    """What was done to fit the budget."""
    applied_strategies: List["Strategy"]
    """Strategies applied, in the order they ran."""
    truncated_layers: List["Layer"]
    """Layers that lost at least one entry, L0 to L2."""
    entries_dropped: int
    """How many candidates were left out."""


class Reason(Variant):
    """Why a candidate was taken or dropped: a closed set."""

    @classmethod
    def mandatory(cls) -> "Reason":
        """Included: it belongs to L0, which is never dropped."""
        return cls("mandatory")

    @classmethod
    def within_budget(cls) -> "Reason":
        """Included: it fit the budget."""
        return cls("within-budget")

    @classmethod
    def keep_last(cls, value: int) -> "Reason":
        """Dropped: older than the last N turns (N given)."""
        return cls("keep-last", value)

    @classmethod
    def over_budget(cls, value: "Shortfall") -> "Reason":
        """Dropped: it needed more tokens than remained."""
        return cls("over-budget", value)

    @classmethod
    def evicted_oldest(cls) -> "Reason":
        """Dropped: an older stage summary evicted so newer ones fit."""
        return cls("evicted-oldest")

    @classmethod
    def tool_pair(cls, value: str) -> "Reason":
        """Dropped together with the tool-call turn it belongs to (its id given)."""
        return cls("tool-pair", value)

    @classmethod
    def orphan_tool_result(cls) -> "Reason":
        """Dropped: a tool result whose call is not in the conversation."""
        return cls("orphan-tool-result")

    @classmethod
    def duplicate_of(cls, value: str) -> "Reason":
        """Dropped: a copy of the included candidate with this id."""
        return cls("duplicate-of", value)

    @classmethod
    def policy_denied(cls, value: str) -> "Reason":
        """Dropped: the policy denied it, for this reason."""
        return cls("policy-denied", value)

    @classmethod
    def out_of_scope(cls) -> "Reason":
        """Dropped: outside the attempt's scopes."""
        return cls("out-of-scope")

    @classmethod
    def no_provenance(cls) -> "Reason":
        """Dropped: it carried no provenance."""
        return cls("no-provenance")

    @classmethod
    def section_not_allowed(cls) -> "Reason":
        """Dropped: a host candidate claimed a section hosts may not fill (an L0 section, the conversation or the stage summaries, which are the request's own)."""
        return cls("section-not-allowed")

    @classmethod
    def summarized(cls, value: str) -> "Reason":
        """Dropped as itself: its text went into the summary with this id."""
        return cls("summarized", value)

    @classmethod
    def step_cut(cls, value: int) -> "Reason":
        """Dropped with older ones so the first kept turn or stage summary moves in steps of this many (the plan's cut step)."""
        return cls("step-cut", value)

    @classmethod
    def beyond_limit(cls, value: int) -> "Reason":
        """Dropped: the source answered more than the limit it was asked for (given), and this one ranked beyond it."""
        return cls("beyond-limit", value)

    @classmethod
    def assembly_failed(cls) -> "Reason":
        """Not decided: the assembly failed first (the snapshot's `failure` says why). Only a failed snapshot has it."""
        return cls("assembly-failed")

    @classmethod
    def unreviewed(cls) -> "Reason":
        """Dropped: it would have fit, but the review rounds were spent before the policy saw it (an assembly reviews in at most four rounds; see the `policy` interface)."""
        return cls("unreviewed")

    @classmethod
    def before_user_turn(cls) -> "Reason":
        """Dropped: the kept conversation begins with a user turn (the request's `conversation-start`), and this turn, though it fit, came before the first user turn kept."""
        return cls("before-user-turn")


@dataclass(kw_only=True, slots=True)
class Shortfall(Record):
    """The numbers behind an over-budget drop."""
    needed: int
    """Tokens the item needed, overhead included (and, for an older turn, every newer one left out): exact when the entry's tokens were counted exactly, otherwise the fewest it could need, since counting stops once an item cannot fit. The true sum, which an overhead near the u32 limit can take past it."""
    remaining: int
    """Tokens that remained: for a text the policy reviewed, in the finished pack (room freed late was offered to it and it did not fit); for one it never saw, when the fill considered it."""


class SnapshotStatus(str, enum.Enum):
    """One condition of an assembly's outcome. A status is a list of them: `complete` alone, or every one of `degraded`, `truncated` and `failed` that holds, in that order (a source may fail and a section be truncated in one assembly)."""
    COMPLETE = "complete"
    DEGRADED = "degraded"
    TRUNCATED = "truncated"
    FAILED = "failed"


@dataclass(kw_only=True, slots=True)
class SnapshotEntry(Record):
    """The record of one candidate in a snapshot."""
    id: str
    """Candidate id."""
    layer: "Layer"
    """Layer."""
    section: "Section"
    """Section."""
    origin: "Origin"
    """What produced it."""
    provenance: Optional["Provenance"] = None
    """Where it came from; absent only for a no-provenance drop."""
    trust: "TrustTier"
    """How far it may be trusted."""
    score: Optional[float] = None
    """The score it was ranked by, if any."""
    tokens: int
    """Its tokens in the request's tokenizer (without the entry overhead), as `counted` says."""
    counted: "Counted"
    """How far its tokens were counted."""
    included: bool
    """Whether it is in the pack."""
    reason: "Reason"
    """Why it was taken or dropped."""
    compressed: bool
    """Whether its text was summarised or truncated."""
    redacted: bool
    """Whether the policy replaced its text."""
    run: Optional["EntryRun"] = None
    """Set when the entry stands for a run of the request's own candidates; its other fields are then the run's first member's."""


@dataclass(kw_only=True, slots=True)
class EntryRun(Record):
    """A run of consecutive conversation turns or stage summaries dropped for the same reason without being counted, recorded as one entry (a long history trimmed is thousands of turns never looked at). The entry's `id` is the first member's and `last-id` the last one's; the ids between are consecutive ("turn-12" … "turn-9911"). Every member has the entry's layer, section, origin and reason, is uncounted (`tokens` 0) and is not included; its provenance and trust follow from the request as the first's do ("conversation[i]", trust by role). For an over-budget run the shortfall is the first member's: every older one needs more. Metrics count every member; `diff-snapshots` compares members."""
    last_id: str = UNSET
    """The last member's id."""
    count: int = UNSET
    """How many candidates the entry stands for, first and last included (at least 2)."""


class Counted(str, enum.Enum):
    """How far a candidate's tokens were counted: counting stops as soon as the decision is clear, so only what decides something is counted."""
    EXACT = "exact"
    OVER = "over"
    UNCOUNTED = "uncounted"


class Origin(str, enum.Enum):
    """What produced a candidate."""
    REQUEST = "request"
    RETRIEVAL = "retrieval"
    MEMORY = "memory"
    GRAPH = "graph"
    REPOSITORY = "repository"
    SUMMARY = "summary"


@dataclass(kw_only=True, slots=True)
class SummaryRequest(Record):
    """One text to summarise."""
    section: "Section" = UNSET
    """The section the summary is for."""
    text: str = UNSET
    """The text."""
    target_tokens: int = UNSET
    """Most tokens the summary may have."""


@dataclass(kw_only=True, slots=True)
class SourceCall(Record):
    """How one host source fared in an assembly."""
    capability: str
    """The capability, e.g. "sources.retrieve"."""
    outcome: "SourceOutcome"
    """What came of it."""


class SourceOutcome(Variant):
    """What came of a source call."""

    @classmethod
    def answered(cls, value: int) -> "SourceOutcome":
        """It answered with this many candidates."""
        return cls("answered", value)

    @classmethod
    def failed(cls, value: str) -> "SourceOutcome":
        """It failed with this message; the assembly is degraded."""
        return cls("failed", value)

    @classmethod
    def skipped(cls, value: str) -> "SourceOutcome":
        """It was not called, for this reason."""
        return cls("skipped", value)


@dataclass(kw_only=True, slots=True)
class SectionCompression(Record):
    """What compression did to one optional section still over its share once the unused shares had flowed."""
    section: "Section"
    """The section."""
    target_tokens: int
    """The tokens a summary of its leftovers could have: the room it kept (the unused part of its share; for the first such section, with what the flow left), less the entry overhead and the summary's citation or fence."""
    outcome: "CompressionOutcome"
    """What came of it."""


class CompressionOutcome(Variant):
    """What came of compressing a section."""

    @classmethod
    def summarized(cls, value: int) -> "CompressionOutcome":
        """Its leftovers were summarised: the summary (`summary:<section>`) is in the pack with this many tokens, citation included."""
        return cls("summarized", value)

    @classmethod
    def cut(cls, value: str) -> "CompressionOutcome":
        """Its leftovers were cut to fit instead of summarised, for this reason (the summariser failed, answered the wrong number of summaries, an empty one, or one that could not fit): whole while they fit, and the first that did not cut at a token boundary. Or it was not summarised (as for `skipped`), and once the pack was settled its first leftover was cut into the room left."""
        return cls("cut", value)

    @classmethod
    def skipped(cls, value: str) -> "CompressionOutcome":
        """It was not compressed, for this reason (a summary could have no tokens, or fewer than the plan's `min-summary-tokens`), and no leftover could be cut into the room the pack left: its leftovers are dropped as over budget."""
        return cls("skipped", value)

    @classmethod
    def whole(cls, value: str) -> "CompressionOutcome":
        """It was compressed, but the room the other sections left once they were done holds its leftovers whole: they went in whole instead, for this reason."""
        return cls("whole", value)


@dataclass(kw_only=True, slots=True)
class FenceReport(Record):
    """How host texts and turns were written into the rendered context: whether the fences' nonce is keyed, and which entries lost characters or had a structure defused (see the book's threat model)."""
    keyed: bool
    """Whether the fences' nonce is a keyed MAC: the builder was given a `fence-key`. Unkeyed, it is a hash of the request's context, which a store that knows that context can compute."""
    stripped: List[str]
    """Ids of the included entries whose text had control characters (other than tab, line feed and carriage return) or tag characters removed, in render order."""
    defused: List[str]
    """Ids of the included entries in whose text a spelling of one of the rendered context's structures (a fence marker, a role header, a citation head, a chat format's marker) had its opening bracket replaced by `(`, or a control token of the request's tokenizer neutralised, in render order."""
    context_role: Optional["Role"] = None
    """The role of the message the other context (what is neither L0 nor a turn) is sent in: `user` where any of it is of unverified or untrusted origin, which never carries system authority; `system` otherwise; none where the pack has none."""
    quoted_lines: int = UNSET
    """How many lines of the flat text begin with the quote (`> `) the pack writes so that no byte of untrusted origin begins a line: every line of a fenced text, every line of a turn after its header. Each costs about a token, counted in the entry's tokens."""


@dataclass(kw_only=True, slots=True)
class Snapshot(Record):
    """The immutable record of one assembly: every candidate, once."""
    id: str
    """Content hash (hex SHA-256) of everything below and the pack."""
    tenant_id: Optional[str] = None
    """Tenant, copied from the request."""
    project_id: Optional[str] = None
    """Project, copied from the request."""
    run_id: Optional[str] = None
    """Run, copied from the request."""
    attempt_id: Optional[str] = None
    """Attempt, copied from the request."""
    scopes: List[str]
    """Scopes the attempt was assembled under."""
    tokenizer: "Tokenizer"
    """The tokenizer counts were made in."""
    model: Optional["ModelUse"] = None
    """The model the request named, and what was taken from its profile (in JSON, left out when none)."""
    token_budget: int
    """The budget."""
    tokens_used: int
    """Tokens the pack is charged: for a request that names its `form`, that form's tokens (`text-tokens` or `message-tokens`); otherwise every included entry's tokens and entry overhead, plus what rendering them together adds (the blank lines between entries, pieces that merge or split across a join) in whichever form adds more, never less than either. Never more than the budget."""
    text_tokens: int
    """Tokens of the pack's flat `text`, counted whole."""
    message_tokens: int
    """Tokens of the pack's `messages`: each message's content counted whole, plus the entry overhead once per message."""
    stable_prefix_tokens: int
    """Tokens of the stable prefix (the L0 entries that lead the pack, rendered together), entry overhead included."""
    cache_prefixes: List["CachePrefix"]
    """The prefixes of the pack's messages that the next turn's pack can repeat byte for byte, for a provider's prompt cache to serve: at each boundary, in order (see `cache-prefix`). None for a pack sent as text (`form: text`)."""
    content_hash: str
    """Hex SHA-256 of the rendered text's UTF-8 bytes: the reference under which a host stores the assembled content (content never in the row), and which it can check."""
    index_revisions: List[str]
    """Index revisions of the included items, sorted, each once."""
    memory_items: List[str]
    """Ids of the included memory items, in render order."""
    status: List["SnapshotStatus"]
    """Outcome: every condition that holds (see `snapshot-status`)."""
    failure: Optional[str] = None
    """Why the assembly failed, when the status says `failed`."""
    profile: "Profile"
    """The builder profile that gathered the candidates."""
    plan: "Plan"
    """The plan the budget was shared by."""
    source_calls: List["SourceCall"]
    """What each host source was asked and how it answered: the sources in the profile's order, then each review round and the summariser in the order they were asked."""
    compressions: List["SectionCompression"]
    """Each optional section still over its share once the unused shares had flowed, in priority order, and what compression did to it."""
    fence: "FenceReport"
    """How host texts and turns were written into the rendered context."""
    chat: Optional["ChatReport"] = None
    """How the request's chat was read and charged (in JSON, left out when the request carried none)."""
    entries: List["SnapshotEntry"]
    """One entry per candidate, in render order (dropped ones where they would have stood); a run of turns or stage summaries dropped alike is one entry (see `entry-run`)."""


class CacheBoundary(str, enum.Enum):
    """Where a prefix of a pack's messages ends."""
    STABLE = "stable"
    HISTORY = "history"
    TURN = "turn"


@dataclass(kw_only=True, slots=True)
class CachePrefix(Record):
    """A prefix of a pack's messages, at one boundary. Two snapshots' prefixes of equal hash are byte-identical: a cache serves the longer turn the shorter one's tokens."""
    boundary: "CacheBoundary"
    """Where it ends."""
    messages: int
    """How many of the pack's messages it holds."""
    tokens: int
    """Its tokens, as `message-tokens` counts them."""
    hash: str
    """Hex SHA-256 of its messages in order, each written as four fields — its role (`system`, `user`, `assistant`, `tool`), its tool-call id, its attached tokens in decimal, its content —, each as its UTF-8 byte length in decimal, `:`, and its bytes (an absent field empty): a host hashes another pack's first messages alike to tell whether a cache serves them."""
    cacheable: bool
    """Whether it reaches the fewest tokens the model's provider caches (`model-profile.cache-min-tokens`; 1,024 for a request that names no model): a cache breakpoint belongs here."""


@dataclass(kw_only=True, slots=True)
class ContextPack(Record):
    """An assembled context."""
    id: str
    """Deterministic id: "<session-id or unknown>-router-pack"."""
    session_id: Optional[str] = None
    """Session, copied from the request."""
    cache_key: Optional[str] = None
    """A key that keeps a session's requests on the provider's cache (OpenAI's `prompt_cache_key`): a hash of the tenant and the session, or of the stable prefix where the request names no session; none where it has neither."""
    trace_id: str
    """Trace, copied from the request."""
    stage_id: Optional[str] = None
    """The current stage, if the workflow names one."""
    entries: List["PackEntry"]
    """Included entries in render order: L0, then L2, then L1."""
    text: str
    """The entries' texts joined by blank lines."""
    messages: List["Message"]
    """The same context as chat messages, in the request's layout: L0 as the first system message (the stable prefix), the other context as a second, and the kept conversation turns with their roles and tool-call ids."""
    budget_used: int
    """Tokens used, entry overhead included; never above the budget."""
    budget_limit: int
    """The budget."""
    compaction: Optional["Compaction"] = None
    """The conversation's compaction, to pass back with the next turn's request: the one the request passed, or a newer one. None where the plan does not compact and the request passed none."""
    chat: Optional["ChatRequest"] = None
    """The request to send, in the shape of the request's chat; none where the request carried no chat, or asked for the flat text (`form: text`), which is then the pack's `text` alone."""
    compression: "CompressionMetadata"
    """What was done to fit."""
    snapshot: "Snapshot"
    """Why every candidate was taken or dropped."""
    event: "ContextAssembled"
    """The context-assembled event, for the host to publish."""
    metrics: "Metrics"
    """Metrics of this assembly, for the host to record."""


@dataclass(kw_only=True, slots=True)
class Message(Record):
    """One chat message."""
    role: "Role"
    """Who speaks."""
    content: str
    """What is said."""
    tool_call_id: Optional[str] = None
    """The tool call a turn makes or answers."""
    attached_tokens: Optional[int] = None
    """Tokens the turn sends beside its text (its images, which the pack holds no copy of), charged with it: send them with it."""


@dataclass(kw_only=True, slots=True)
class ContextAssembled(Record):
    """The context-assembled event: what a host publishes once an assembly's snapshot is stored."""
    context_snapshot_id: str
    """The snapshot's id."""
    tenant_id: Optional[str] = None
    """Tenant."""
    run_id: Optional[str] = None
    """Run."""
    attempt_id: Optional[str] = None
    """Attempt."""
    status: List["SnapshotStatus"]
    """Outcome."""
    tokens_used: int
    """Tokens used."""
    token_budget: int
    """The budget."""


@dataclass(kw_only=True, slots=True)
class Metrics(Record):
    """Metrics of one assembly."""
    tokens_per_section: List["SectionTokens"]
    """Tokens included per section (entry overhead included), sections with none left out, in section order."""
    dropped_by_reason: List["ReasonCount"]
    """Dropped candidates per reason, by the reason's name, sorted."""


@dataclass(kw_only=True, slots=True)
class SectionTokens(Record):
    """Tokens of one section."""
    section: "Section"
    """Section."""
    tokens: int
    """Tokens."""


@dataclass(kw_only=True, slots=True)
class ReasonCount(Record):
    """How many candidates were dropped for one reason."""
    reason: str
    """The reason's name, e.g. "over-budget"."""
    count: int
    """How many."""


class ChangeKind(str, enum.Enum):
    """What happened to one candidate between two snapshots."""
    ENTERED = "entered"
    LEFT = "left"
    MOVED = "moved"
    RETOKENED = "retokened"
    REASON_CHANGED = "reason-changed"
    APPEARED_DROPPED = "appeared-dropped"
    VANISHED_DROPPED = "vanished-dropped"


@dataclass(kw_only=True, slots=True)
class EntryState(Record):
    """A candidate's state in one snapshot."""
    section: "Section"
    """Section."""
    included: bool
    """Whether it was included."""
    reason: "Reason"
    """Why."""
    tokens: int
    """Its tokens."""
    position: Optional[int] = None
    """Its place among the included entries, from 0."""


@dataclass(kw_only=True, slots=True)
class Change(Record):
    """One changed candidate."""
    id: str
    """Candidate id."""
    origin: "Origin"
    """What produced it."""
    kind: "ChangeKind"
    """What happened."""
    before: Optional["EntryState"] = None
    """Before, if it was a candidate then."""
    after: Optional["EntryState"] = None
    """After, if it is a candidate now."""


@dataclass(kw_only=True, slots=True)
class SnapshotDiff(Record):
    """What changed between two snapshots, and why."""
    before_id: str
    """The earlier snapshot's id."""
    after_id: str
    """The later snapshot's id."""
    status_before: List["SnapshotStatus"]
    """Status before."""
    status_after: List["SnapshotStatus"]
    """Status after."""
    tokens_before: int
    """Tokens used before."""
    tokens_after: int
    """Tokens used after."""
    changes: List["Change"]
    """Changed candidates: the later snapshot's order, then those only in the earlier one."""
    unchanged: int
    """Candidates whose state did not change."""


class CtxpackError(Variant):
    """Why an assembly or a configuration was refused."""

    @classmethod
    def invalid_field(cls, value: "FieldError") -> "CtxpackError":
        """A request or configuration field is invalid."""
        return cls("invalid-field", value)

    @classmethod
    def mandatory_over_budget(cls, value: "MandatoryShortfall") -> "CtxpackError":
        """What must be sent does not fit the budget: the L0 layer, with, for a conversation, its newest user turn and the calls made for it (the question being answered is never dropped); nothing was truncated."""
        return cls("mandatory-over-budget", value)

    @classmethod
    def tokenizer_unavailable(cls, value: str) -> "CtxpackError":
        """A tokenizer this build of the component does not have, named."""
        return cls("tokenizer-unavailable", value)

    @classmethod
    def host_failed(cls, value: "HostError") -> "CtxpackError":
        """A host import failed where the assembly cannot go on without it."""
        return cls("host-failed", value)

    @classmethod
    def step_mismatch(cls, value: str) -> "CtxpackError":
        """A host driving an `assembly` step by step answered something it was not asked: another step, a source call that does not exist, one answered already. Nothing changed; the host may answer again."""
        return cls("step-mismatch", value)


@dataclass(kw_only=True, slots=True)
class AssemblyFailure(Record):
    """An assembly that gave no pack: why, and — when it had begun (L0 over the budget, the policy failing) — its `failed` snapshot, with every candidate known by then, for the host to store. A request refused as invalid has no snapshot."""
    error: "CtxpackError" = UNSET
    """Why."""
    snapshot: Optional["Snapshot"] = None
    """The failed snapshot, if the assembly had begun."""


@dataclass(kw_only=True, slots=True)
class FieldError(Record):
    """An invalid field."""
    field: str = UNSET
    """Path of the field, e.g. "request.conversation[3].tool-call-id"."""
    message: str = UNSET
    """What is wrong with it."""


@dataclass(kw_only=True, slots=True)
class MandatoryShortfall(Record):
    """The numbers behind a mandatory-over-budget failure."""
    mandatory_tokens: int = UNSET
    """Tokens L0 needs rendered, entry overhead included: the true sum, which may pass any budget."""
    budget: int = UNSET
    """The budget."""


@dataclass(kw_only=True, slots=True)
class HostError(Record):
    """How a host import failed."""
    capability: str = UNSET
    """The host capability that failed, e.g. "sources.retrieve"."""
    message: str = UNSET
    """What the host said."""


@dataclass(kw_only=True, slots=True)
class BuilderConfig(Record):
    """What a builder is constructed from, once per instance."""
    preload: List[Union["Tokenizer", Literal["o200k-base", "cl100k-base"]]] = field(default_factory=list)
    """Tokenizers the builder must have: checked at `create`, so a component built without one refuses the builder at once. (Their tables are static data; there is nothing left to build ahead.)"""
    tokenizers: List["TokenizerFile"] = field(default_factory=list)
    """Tokenizer files, each read once here; a request counts with one by naming it. A file that cannot be read refuses the builder."""
    models: List["ModelProfile"] = field(default_factory=list)
    """Model profiles added to the built-in ones (one of the same name replaces it); each is checked here."""
    profile: Union["Profile", Literal["passthrough"]] = UNSET
    """What the builder gathers from the host."""
    near_duplicate_threshold: float = UNSET
    """Estimated Jaccard similarity (of three-word shingles) at which a host candidate is a near-duplicate of a higher-ranked one, in (0, 1]; 1 keeps exact duplicate detection only. 0.8 catches a few words edited in a 300-token chunk."""
    ranking: "Ranking" = UNSET
    """Terms added to the fused rank score; all zero ranks by reciprocal-rank fusion alone."""
    plan: "Plan" = UNSET
    """Budget defaults, the model window and the sections' shares."""
    count_cache_entries: int = UNSET
    """Most token counts the builder keeps between assemblies (keyed by a hash of the text and the tokenizer), so a conversation re-assembled every turn recounts only its new text; 0 keeps none."""
    fence_key: Optional[str] = None
    """A secret of at least 16 bytes: the fences' nonce is then a keyed MAC (HMAC-SHA-256) of the request's context, so no store can name the closing marker of a fence it writes into. Without one the nonce is a hash of that context, and the snapshot says the fence is unkeyed. The same key and context give the same nonce, so packs stay deterministic and prompt caches hit."""


@dataclass(kw_only=True, slots=True)
class Plan(Record):
    """The plan of an assembly: the budget, the model window, and how the budget is shared among sections. L0 is charged first and whole; each optional section then fills up to its share, and what sections leave unused flows to the others in priority order: conversation, repository state, relevant knowledge, graph neighbours, episodic memory, current diff, tool results, supporting context, stage summaries."""
    default_budget: int = UNSET
    """The budget of a request that names none (24000 by default)."""
    model_window: Optional[int] = None
    """The model's context window; a budget may not exceed it less the safety margin."""
    safety_margin: float = UNSET
    """Share of the window kept free, in [0, 1)."""
    shares: List["SectionShare"] = field(default_factory=list)
    """Each section's share of the budget, in [0, 1], summing to at most 1; a section left out is filled only from unused shares."""
    compress: bool = UNSET
    """Whether an optional section over its share is summarised (or, failing that, truncated) into its unused share instead of cut."""
    min_summary_tokens: int = UNSET
    """The fewest tokens a summary must be able to have for the summariser to be asked (32 by default): a section whose room, less the entry overhead and the summary's citation or fence, is smaller is not compressed, and the snapshot's `compressions` says so. With a small budget the default keeps the summariser from being called; set it lower to summarise into little room."""
    cut_step: int = UNSET
    """The first kept conversation turn (and stage summary) moves in steps of this many, so the rendered text stays byte-stable across the turns of a growing conversation and prompt caches hit; 1 moves it by one."""
    cut_share: float = UNSET
    """In a cache-first layout, the conversation gives way this share of the budget at a time: its first kept turn is the first it may begin with (a unit's first; the user's, where it must begin with the user) once the conversation before it has filled a whole number of such steps (its text taken at 4 bytes a token, so a turn's steps never change as the conversation grows, and nothing it let go is counted). Where no step of that size begins within what fits, steps of its half, then its quarter; where none does, the oldest turn that fits begins it. 0.55 by default; 0 gives way turn by turn."""
    compact_share: float = UNSET
    """Compaction: when the conversation since its summary (its text taken at 4 bytes a token) passes this share of the budget, its oldest tool results are cleared, and if it is still past, its oldest turns are summarised by the host's summariser, until about half that share is left. The pack's `compaction` says what was, for the next request to pass back: until the next compaction its bytes stay as they are. 0 (the default) never compacts."""
    compact_tokens: int = UNSET
    """The most tokens of the conversation's summary (512 by default); 0 only clears tool results."""
    clear_at_least: int = UNSET
    """Tool results are cleared only when that frees at least this many tokens at once, the newest 3 kept, each result's call kept with it; 0 (the default) clears none."""


@dataclass(kw_only=True, slots=True)
class SectionShare(Record):
    """One section's share of the budget."""
    section: Union["Section", Literal["system-prompt", "workflow-status", "mandatory-instructions", "current-task", "conversation-state", "current-diff", "tool-results", "repository-state", "relevant-knowledge", "graph-neighbours", "episodic-memory", "supporting-context", "stage-summaries"]]
    """The section."""
    share: float
    """Its share, in [0, 1]."""


@dataclass(kw_only=True, slots=True)
class Ranking(Record):
    """Terms of the fused score besides reciprocal-rank fusion (which adds at most 1/61 per source, so weights of about 0.01 already reorder)."""
    trust_system: float = UNSET
    """Added for a system candidate."""
    trust_trusted: float = UNSET
    """Added for a trusted candidate."""
    trust_unverified: float = UNSET
    """Added for an unverified candidate."""
    trust_untrusted: float = UNSET
    """Added for an untrusted candidate."""
    recency: float = UNSET
    """Times the recency: 1 for the newest sequence, 0 for the oldest, 0 without one."""


class Profile(Variant):
    """What a builder gathers from its host: one builder interface from no sources at all up to every source."""

    @classmethod
    def passthrough(cls) -> "Profile":
        """No retrieval: the pack holds what the request carries."""
        return cls("passthrough")

    @classmethod
    def rag(cls, value: "RagSettings") -> "Profile":
        """Retrieval through `sources.retrieve`."""
        return cls("rag", value)

    @classmethod
    def rag_memory(cls, value: "RagMemorySettings") -> "Profile":
        """Retrieval, plus long-term memory through `sources.recall-memory` scoped by the user id (skipped, and recorded so, without one)."""
        return cls("rag-memory", value)

    @classmethod
    def full(cls, value: "FullSettings") -> "Profile":
        """Every source: retrieval, graph expansion from what was retrieved, long-term memory (with a user id) and repository state."""
        return cls("full", value)


@dataclass(kw_only=True, slots=True)
class FullSettings(Record):
    """Settings of the `full` profile."""
    retrieve_limit: int
    """Most candidates to ask `sources.retrieve` for."""
    graph_depth: int
    """Most graph hops from the retrieved items (0: no expansion)."""
    memory_limit: int
    """Most memory items to ask `sources.recall-memory` for."""
    repository_state: bool
    """Whether to ask `sources.repository-state`."""


@dataclass(kw_only=True, slots=True)
class RagSettings(Record):
    """Settings of the `rag` profile."""
    retrieve_limit: int
    """Most candidates to ask `sources.retrieve` for."""


@dataclass(kw_only=True, slots=True)
class RagMemorySettings(Record):
    """Settings of the `rag-memory` profile."""
    retrieve_limit: int
    """Most candidates to ask `sources.retrieve` for."""
    memory_limit: int
    """Most memory items to ask `sources.recall-memory` for."""


@dataclass(kw_only=True, slots=True)
class RequestContext(Record):
    """The context a skill receives after dispatch."""
    user_query: str
    """The raw query."""
    conversation_history: List["ConversationTurn"]
    """The conversation turns the pack kept, oldest first."""
    retrieved_context: List["PackEntry"]
    """Retrieved items the pack kept, as packed (after policy)."""
    memory_items: List["PackEntry"]
    """Memory items the pack kept, as packed (after policy)."""
    session_id: Optional[str] = None
    """Session."""
    trace_id: str
    """Trace."""
    user_id: Optional[str] = None
    """User."""


class ConfigFormat(str, enum.Enum):
    """The format of a router config text."""
    YAML = "yaml"
    JSON = "json"


@dataclass(kw_only=True, slots=True)
class RuleScore(Record):
    """How one rule fared on a query."""
    rule: str
    """The rule, e.g. "keywords: weather, forecast"."""
    weight: float
    """Its weight, in (0, 1]."""
    matched: Optional[str] = None
    """What matched (normalised for keywords and phrases), if it matched."""


@dataclass(kw_only=True, slots=True)
class RouteScore(Record):
    """How one route fared on a query."""
    route: str
    """Route name."""
    score: float
    """Its score: 1 - product of (1 - weight) over matched rules."""
    rules: List["RuleScore"]
    """Every rule, in config order."""


@dataclass(kw_only=True, slots=True)
class Entity(Record):
    """A named capture of an entity pattern."""
    name: str
    """The capture group's name."""
    value: str
    """The captured text, as written in the query."""


@dataclass(kw_only=True, slots=True)
class RoutingDecision(Record):
    """What the router decided, and why."""
    route: Optional[str] = None
    """The best route, if any rule of any route matched."""
    skill: Optional[str] = None
    """Its skill."""
    confidence: float
    """best x (1 - second best), in [0, 1]."""
    threshold: float
    """The threshold that applied (the route's own, or the global one)."""
    low_confidence: bool
    """No route, or confidence below the threshold."""
    reference_cue: Optional[str] = None
    """The reference/comparison cue found in the query; such a query goes to the builder even on a confident route."""
    matched_entities: List["Entity"]
    """Named captures of the best route's entity patterns."""
    scores: List["RouteScore"]
    """Every route with a score above zero, best first (ties by name)."""


@dataclass(kw_only=True, slots=True)
class SkillDispatch(Record):
    """A confident route's dispatch."""
    route: str
    """The route."""
    skill: str
    """The skill to run."""
    matched_entities: List["Entity"]
    """Entities the router matched."""
    context: "RequestContext"
    """The trivial context: the query and the ids, nothing gathered."""


@dataclass(kw_only=True, slots=True)
class FallbackDispatch(Record):
    """The builder branch's dispatch."""
    context: "RequestContext"
    """The request context drawn from the pack."""
    pack: "ContextPack"
    """The assembled pack, with its snapshot."""


class Dispatch(Variant):
    """Where a query goes."""

    @classmethod
    def skill(cls, value: "SkillDispatch") -> "Dispatch":
        """Straight to a skill; the builder was not called."""
        return cls("skill", value)

    @classmethod
    def fallback(cls, value: "FallbackDispatch") -> "Dispatch":
        """Through the builder to the fallback skill."""
        return cls("fallback", value)


@dataclass(kw_only=True, slots=True)
class Handling(Record):
    """The routing decision and what came of it."""
    decision: "RoutingDecision"
    """What the router decided, and why."""
    dispatch: "Dispatch"
    """Where the query went."""


class Verdict(Variant):
    """The policy's word on one item."""

    @classmethod
    def allow(cls) -> "Verdict":
        """Include it as it is."""
        return cls("allow")

    @classmethod
    def redact(cls, value: str) -> "Verdict":
        """Include it with this text instead."""
        return cls("redact", value)

    @classmethod
    def deny(cls, value: str) -> "Verdict":
        """Leave it out, for this reason."""
        return cls("deny", value)


@dataclass(kw_only=True, slots=True)
class RetrieveRequest(Record):
    """The arguments of `sources.retrieve`."""
    query: str = UNSET
    limit: int = UNSET


@dataclass(kw_only=True, slots=True)
class ExpandGraphRequest(Record):
    """The arguments of `sources.expand-graph`."""
    item_ids: List[str] = field(default_factory=list)
    """The items to expand from, best first."""
    depth: int = UNSET


@dataclass(kw_only=True, slots=True)
class RecallMemoryRequest(Record):
    """The arguments of `sources.recall-memory`."""
    user_id: str = UNSET
    query: str = UNSET
    limit: int = UNSET


@dataclass(kw_only=True, slots=True)
class ReviewRequest(Record):
    """The arguments of `policy.review`."""
    items: List["Candidate"] = field(default_factory=list)
    """The batch, in rank order, each text as the host gave it."""


@dataclass(kw_only=True, slots=True)
class CountTokensRequest(Record):
    """The arguments of `counter.count-tokens`."""
    tokenizer: str = UNSET
    """The name the request's `tokenizer.host` gives."""
    texts: List[str] = field(default_factory=list)
    """The texts to count."""


@dataclass(kw_only=True, slots=True)
class CountMessagesRequest(Record):
    """The arguments of `counter.count-messages`."""
    tokenizer: str = UNSET
    """The name the trim's `tokenizer.host` gives."""
    lists: List["MessageList"] = field(default_factory=list)
    """The lists to count, each as one request."""


@dataclass(kw_only=True, slots=True)
class SplitTextRequest(Record):
    """The arguments of `counter.split-text`."""
    texts: List[str] = field(default_factory=list)
    """The texts to split."""


@dataclass(kw_only=True, slots=True)
class SummarizeRequest(Record):
    """The arguments of `summarizer.summarize`."""
    requests: List["SummaryRequest"] = field(default_factory=list)
    """One text per section, each to summarise within its target."""
    tokenizer: "Tokenizer" = UNSET
    """The tokenizer the targets are counted in."""


class Call(Variant):
    """One call of a step: the import of the same name, with its arguments but the context (the request's)."""

    @classmethod
    def retrieve(cls, value: "RetrieveRequest") -> "Call":
        """retrieve"""
        return cls("retrieve", value)

    @classmethod
    def expand_graph(cls, value: "ExpandGraphRequest") -> "Call":
        """expand-graph"""
        return cls("expand-graph", value)

    @classmethod
    def recall_memory(cls, value: "RecallMemoryRequest") -> "Call":
        """recall-memory"""
        return cls("recall-memory", value)

    @classmethod
    def repository_state(cls) -> "Call":
        """repository-state"""
        return cls("repository-state")

    @classmethod
    def review(cls, value: "ReviewRequest") -> "Call":
        """review"""
        return cls("review", value)

    @classmethod
    def summarize(cls, value: "SummarizeRequest") -> "Call":
        """summarize"""
        return cls("summarize", value)

    @classmethod
    def count_tokens(cls, value: "CountTokensRequest") -> "Call":
        """count-tokens"""
        return cls("count-tokens", value)

    @classmethod
    def count_messages(cls, value: "CountMessagesRequest") -> "Call":
        """count-messages"""
        return cls("count-messages", value)

    @classmethod
    def split_text(cls, value: "SplitTextRequest") -> "Call":
        """split-text"""
        return cls("split-text", value)


__all__ = [
    "UNSET",
    "AgentContext",
    "AssembleRequest",
    "AssemblyFailure",
    "Assumed",
    "BlockRange",
    "BuilderConfig",
    "CacheBoundary",
    "CachePrefix",
    "Call",
    "Candidate",
    "Change",
    "ChangeKind",
    "Chat",
    "ChatReport",
    "ChatRequest",
    "ChatShape",
    "Compaction",
    "CompressionMetadata",
    "CompressionOutcome",
    "ConfigFormat",
    "ContextAssembled",
    "ContextPack",
    "ConversationStart",
    "ConversationTurn",
    "CountMessagesRequest",
    "CountRequest",
    "CountTokensRequest",
    "Counted",
    "Dispatch",
    "Entity",
    "EntryRun",
    "EntryState",
    "ExpandGraphRequest",
    "FallbackDispatch",
    "FenceReport",
    "FieldError",
    "FullSettings",
    "Handling",
    "ImageRule",
    "ImageTiles",
    "Layer",
    "Layout",
    "MandatoryShortfall",
    "Message",
    "MessageList",
    "Metrics",
    "ModelProfile",
    "ModelUse",
    "Origin",
    "PackEntry",
    "PackForm",
    "Partial",
    "Plan",
    "Profile",
    "Provenance",
    "RagMemorySettings",
    "RagSettings",
    "Ranking",
    "Reason",
    "ReasonCount",
    "RecallMemoryRequest",
    "RequestContext",
    "RetrieveRequest",
    "ReviewRequest",
    "Role",
    "RouteScore",
    "RoutingDecision",
    "RuleScore",
    "Section",
    "SectionCompression",
    "SectionShare",
    "SectionTokens",
    "Shortfall",
    "SkillDispatch",
    "Snapshot",
    "SnapshotDiff",
    "SnapshotEntry",
    "SnapshotStatus",
    "SourceCall",
    "SourceOutcome",
    "SplitTextRequest",
    "StageSummary",
    "Strategy",
    "SummarizeRequest",
    "SummaryRequest",
    "TextPieces",
    "TextSplit",
    "TokenCounts",
    "Tokenizer",
    "TokenizerFile",
    "TrimRequest",
    "TrimStrategy",
    "Trimmed",
    "TrustTier",
    "Verdict",
    "WorkflowStatus",
]

# Decoders from the component's JSON, one per type.
def _d_AgentContext(o):
    g = o.get
    return AgentContext(session_id=g("session-id"), trace_id=o["trace-id"], user_id=g("user-id"), tenant_id=g("tenant-id"), project_id=g("project-id"), run_id=g("run-id"), attempt_id=g("attempt-id"), scopes=(g("scopes") or []))
def _d_Tokenizer(o):
    if o.__class__ is str:
        return Tokenizer(o)
    ((tag, v),) = o.items()
    if tag == "chars-per-token":
        return Tokenizer(tag, v)
    if tag == "named":
        return Tokenizer(tag, v)
    if tag == "host":
        return Tokenizer(tag, v)
    return Tokenizer(tag, v)
def _d_ModelProfile(o):
    g = o.get
    return ModelProfile(name=o["name"], tokenizer=_d_Tokenizer(o["tokenizer"]), context_window=o["context-window"], output_reserve=o["output-reserve"], message_overhead=o["message-overhead"], reply_overhead=o["reply-overhead"], cache_min_tokens=g("cache-min-tokens"), images=(None if (y := g("images")) is None else _d_ImageRule(y)))
def _d_ImageRule(o):
    if o.__class__ is str:
        return ImageRule(o)
    ((tag, v),) = o.items()
    if tag == "tiles":
        return ImageRule(tag, _d_ImageTiles(v))
    if tag == "patches":
        return ImageRule(tag, v)
    return ImageRule(tag, v)
def _d_ImageTiles(o):
    g = o.get
    return ImageTiles(base=o["base"], tile=o["tile"])
_d_Assumed = Assumed._value2member_map_.__getitem__
def _d_ModelUse(o):
    g = o.get
    return ModelUse(profile=_d_ModelProfile(o["profile"]), assumed=[_d_Assumed(x) for x in (g("assumed") or [])])
def _d_TokenizerFile(o):
    g = o.get
    return TokenizerFile(name=o["name"], text=o["text"], pattern=g("pattern"))
_d_Layer = Layer._value2member_map_.__getitem__
_d_Section = Section._value2member_map_.__getitem__
_d_TrustTier = TrustTier._value2member_map_.__getitem__
def _d_Provenance(o):
    g = o.get
    return Provenance(source_kind=o["source-kind"], reference=o["reference"], source_version=g("source-version"), index_revision=g("index-revision"))
_d_Role = Role._value2member_map_.__getitem__
def _d_ConversationTurn(o):
    g = o.get
    return ConversationTurn(role=_d_Role(o["role"]), content=o["content"], tool_call_id=g("tool-call-id"), attached_tokens=g("attached-tokens"))
_d_ConversationStart = ConversationStart._value2member_map_.__getitem__
_d_PackForm = PackForm._value2member_map_.__getitem__
_d_Layout = Layout._value2member_map_.__getitem__
def _d_WorkflowStatus(o):
    g = o.get
    return WorkflowStatus(status=o["status"], stage_id=g("stage-id"))
def _d_StageSummary(o):
    g = o.get
    return StageSummary(stage_id=o["stage-id"], outcome=o["outcome"], summary=o["summary"])
def _d_Candidate(o):
    g = o.get
    return Candidate(id=o["id"], section=_d_Section(o["section"]), text=o["text"], provenance=(None if (y := g("provenance")) is None else _d_Provenance(y)), trust=_d_TrustTier(o["trust"]), score=g("score"), sequence=g("sequence"), scope=g("scope"), token_count=g("token-count"))
def _d_AssembleRequest(o):
    g = o.get
    return AssembleRequest(context=_d_AgentContext(o["context"]), query=o["query"], model=g("model"), tokenizer=(None if (y := g("tokenizer")) is None else _d_Tokenizer(y)), budget=g("budget"), entry_overhead=g("entry-overhead"), reply_overhead=g("reply-overhead"), system_prompt=o["system-prompt"], workflow=(None if (y := g("workflow")) is None else _d_WorkflowStatus(y)), instructions=(g("instructions") or []), current_task=g("current-task"), conversation=[_d_ConversationTurn(x) for x in (g("conversation") or [])], chat=(None if (y := g("chat")) is None else _d_Chat(y)), keep_last=o["keep-last"], conversation_start=(None if (y := g("conversation-start")) is None else _d_ConversationStart(y)), form=(None if (y := g("form")) is None else _d_PackForm(y)), layout=(None if (y := g("layout")) is None else _d_Layout(y)), stage_summaries=[_d_StageSummary(x) for x in (g("stage-summaries") or [])], compaction=(None if (y := g("compaction")) is None else _d_Compaction(y)))
_d_ChatShape = ChatShape._value2member_map_.__getitem__
def _d_Chat(o):
    g = o.get
    return Chat(shape=_d_ChatShape(o["shape"]), messages=o["messages"])
def _d_CountRequest(o):
    g = o.get
    return CountRequest(model=g("model"), tokenizer=(None if (y := g("tokenizer")) is None else _d_Tokenizer(y)), entry_overhead=g("entry-overhead"), reply_overhead=g("reply-overhead"), texts=(g("texts") or []), chat=(None if (y := g("chat")) is None else _d_Chat(y)))
def _d_TokenCounts(o):
    g = o.get
    return TokenCounts(tokenizer=(None if (y := g("tokenizer")) is None else _d_Tokenizer(y)), model=(None if (y := g("model")) is None else _d_ModelUse(y)), texts=(g("texts") or []), system=o["system"], messages=(g("messages") or []), turns=(g("turns") or []), total=o["total"])
_d_TrimStrategy = TrimStrategy._value2member_map_.__getitem__
_d_TextSplit = TextSplit._value2member_map_.__getitem__
def _d_TrimRequest(o):
    g = o.get
    return TrimRequest(chat=_d_Chat(o["chat"]), max_tokens=o["max-tokens"], model=g("model"), tokenizer=(None if (y := g("tokenizer")) is None else _d_Tokenizer(y)), entry_overhead=g("entry-overhead"), reply_overhead=g("reply-overhead"), strategy=_d_TrimStrategy(o["strategy"]), include_system=o["include-system"], start_on=[_d_Role(x) for x in (g("start-on") or [])], end_on=[_d_Role(x) for x in (g("end-on") or [])], allow_partial=o["allow-partial"], split=_d_TextSplit(o["split"]))
def _d_Partial(o):
    g = o.get
    return Partial(message=o["message"], blocks=(None if (y := g("blocks")) is None else _d_BlockRange(y)), text=g("text"))
def _d_BlockRange(o):
    g = o.get
    return BlockRange(first=o["first"], count=o["count"])
def _d_MessageList(o):
    g = o.get
    return MessageList(messages=(g("messages") or []), cut=(None if (y := g("cut")) is None else _d_Partial(y)))
def _d_TextPieces(o):
    g = o.get
    return TextPieces(pieces=(g("pieces") or []))
def _d_Trimmed(o):
    g = o.get
    return Trimmed(kept=(g("kept") or []), partial=(None if (y := g("partial")) is None else _d_Partial(y)), messages=o["messages"], tokens=o["tokens"])
def _d_ChatRequest(o):
    g = o.get
    return ChatRequest(shape=_d_ChatShape(o["shape"]), body=o["body"], sources=(g("sources") or []))
def _d_ChatReport(o):
    g = o.get
    return ChatReport(shape=_d_ChatShape(o["shape"]), turns=(g("turns") or []), bounded=(g("bounded") or []))
def _d_Compaction(o):
    g = o.get
    return Compaction(summary=o["summary"], turns=o["turns"], cleared=o["cleared"], hash=o["hash"])
def _d_PackEntry(o):
    g = o.get
    return PackEntry(id=o["id"], layer=_d_Layer(o["layer"]), section=_d_Section(o["section"]), role=_d_Role(o["role"]), text=o["text"], tokens=o["tokens"], provenance=_d_Provenance(o["provenance"]), trust=_d_TrustTier(o["trust"]))
_d_Strategy = Strategy._value2member_map_.__getitem__
def _d_CompressionMetadata(o):
    g = o.get
    return CompressionMetadata(applied_strategies=[_d_Strategy(x) for x in (g("applied-strategies") or [])], truncated_layers=[_d_Layer(x) for x in (g("truncated-layers") or [])], entries_dropped=o["entries-dropped"])
def _d_Reason(o):
    if o.__class__ is str:
        return Reason(o)
    ((tag, v),) = o.items()
    if tag == "keep-last":
        return Reason(tag, v)
    if tag == "over-budget":
        return Reason(tag, _d_Shortfall(v))
    if tag == "tool-pair":
        return Reason(tag, v)
    if tag == "duplicate-of":
        return Reason(tag, v)
    if tag == "policy-denied":
        return Reason(tag, v)
    if tag == "summarized":
        return Reason(tag, v)
    if tag == "step-cut":
        return Reason(tag, v)
    if tag == "beyond-limit":
        return Reason(tag, v)
    return Reason(tag, v)
def _d_Shortfall(o):
    g = o.get
    return Shortfall(needed=o["needed"], remaining=o["remaining"])
_d_SnapshotStatus = SnapshotStatus._value2member_map_.__getitem__
def _d_SnapshotEntry(o):
    g = o.get
    return SnapshotEntry(id=o["id"], layer=_d_Layer(o["layer"]), section=_d_Section(o["section"]), origin=_d_Origin(o["origin"]), provenance=(None if (y := g("provenance")) is None else _d_Provenance(y)), trust=_d_TrustTier(o["trust"]), score=g("score"), tokens=o["tokens"], counted=_d_Counted(o["counted"]), included=o["included"], reason=_d_Reason(o["reason"]), compressed=o["compressed"], redacted=o["redacted"], run=(None if (y := g("run")) is None else _d_EntryRun(y)))
def _d_EntryRun(o):
    g = o.get
    return EntryRun(last_id=o["last-id"], count=o["count"])
_d_Counted = Counted._value2member_map_.__getitem__
_d_Origin = Origin._value2member_map_.__getitem__
def _d_SummaryRequest(o):
    g = o.get
    return SummaryRequest(section=_d_Section(o["section"]), text=o["text"], target_tokens=o["target-tokens"])
def _d_SourceCall(o):
    g = o.get
    return SourceCall(capability=o["capability"], outcome=_d_SourceOutcome(o["outcome"]))
def _d_SourceOutcome(o):
    if o.__class__ is str:
        return SourceOutcome(o)
    ((tag, v),) = o.items()
    if tag == "answered":
        return SourceOutcome(tag, v)
    if tag == "failed":
        return SourceOutcome(tag, v)
    if tag == "skipped":
        return SourceOutcome(tag, v)
    return SourceOutcome(tag, v)
def _d_SectionCompression(o):
    g = o.get
    return SectionCompression(section=_d_Section(o["section"]), target_tokens=o["target-tokens"], outcome=_d_CompressionOutcome(o["outcome"]))
def _d_CompressionOutcome(o):
    if o.__class__ is str:
        return CompressionOutcome(o)
    ((tag, v),) = o.items()
    if tag == "summarized":
        return CompressionOutcome(tag, v)
    if tag == "cut":
        return CompressionOutcome(tag, v)
    if tag == "skipped":
        return CompressionOutcome(tag, v)
    if tag == "whole":
        return CompressionOutcome(tag, v)
    return CompressionOutcome(tag, v)
def _d_FenceReport(o):
    g = o.get
    return FenceReport(keyed=o["keyed"], stripped=(g("stripped") or []), defused=(g("defused") or []), context_role=(None if (y := g("context-role")) is None else _d_Role(y)), quoted_lines=o["quoted-lines"])
def _d_Snapshot(o):
    g = o.get
    return Snapshot(id=o["id"], tenant_id=g("tenant-id"), project_id=g("project-id"), run_id=g("run-id"), attempt_id=g("attempt-id"), scopes=(g("scopes") or []), tokenizer=_d_Tokenizer(o["tokenizer"]), model=(None if (y := g("model")) is None else _d_ModelUse(y)), token_budget=o["token-budget"], tokens_used=o["tokens-used"], text_tokens=o["text-tokens"], message_tokens=o["message-tokens"], stable_prefix_tokens=o["stable-prefix-tokens"], cache_prefixes=[_d_CachePrefix(x) for x in (g("cache-prefixes") or [])], content_hash=o["content-hash"], index_revisions=(g("index-revisions") or []), memory_items=(g("memory-items") or []), status=[_d_SnapshotStatus(x) for x in (g("status") or [])], failure=g("failure"), profile=_d_Profile(o["profile"]), plan=_d_Plan(o["plan"]), source_calls=[_d_SourceCall(x) for x in (g("source-calls") or [])], compressions=[_d_SectionCompression(x) for x in (g("compressions") or [])], fence=_d_FenceReport(o["fence"]), chat=(None if (y := g("chat")) is None else _d_ChatReport(y)), entries=LazyList((g("entries") or []), _d_SnapshotEntry))
_d_CacheBoundary = CacheBoundary._value2member_map_.__getitem__
def _d_CachePrefix(o):
    g = o.get
    return CachePrefix(boundary=_d_CacheBoundary(o["boundary"]), messages=o["messages"], tokens=o["tokens"], hash=o["hash"], cacheable=o["cacheable"])
def _d_ContextPack(o):
    g = o.get
    return ContextPack(id=o["id"], session_id=g("session-id"), cache_key=g("cache-key"), trace_id=o["trace-id"], stage_id=g("stage-id"), entries=[_d_PackEntry(x) for x in (g("entries") or [])], text=o["text"], messages=[_d_Message(x) for x in (g("messages") or [])], budget_used=o["budget-used"], budget_limit=o["budget-limit"], compaction=(None if (y := g("compaction")) is None else _d_Compaction(y)), chat=(None if (y := g("chat")) is None else _d_ChatRequest(y)), compression=_d_CompressionMetadata(o["compression"]), snapshot=_d_Snapshot(o["snapshot"]), event=_d_ContextAssembled(o["event"]), metrics=_d_Metrics(o["metrics"]))
def _d_Message(o):
    g = o.get
    return Message(role=_d_Role(o["role"]), content=o["content"], tool_call_id=g("tool-call-id"), attached_tokens=g("attached-tokens"))
def _d_ContextAssembled(o):
    g = o.get
    return ContextAssembled(context_snapshot_id=o["context-snapshot-id"], tenant_id=g("tenant-id"), run_id=g("run-id"), attempt_id=g("attempt-id"), status=[_d_SnapshotStatus(x) for x in (g("status") or [])], tokens_used=o["tokens-used"], token_budget=o["token-budget"])
def _d_Metrics(o):
    g = o.get
    return Metrics(tokens_per_section=[_d_SectionTokens(x) for x in (g("tokens-per-section") or [])], dropped_by_reason=[_d_ReasonCount(x) for x in (g("dropped-by-reason") or [])])
def _d_SectionTokens(o):
    g = o.get
    return SectionTokens(section=_d_Section(o["section"]), tokens=o["tokens"])
def _d_ReasonCount(o):
    g = o.get
    return ReasonCount(reason=o["reason"], count=o["count"])
_d_ChangeKind = ChangeKind._value2member_map_.__getitem__
def _d_EntryState(o):
    g = o.get
    return EntryState(section=_d_Section(o["section"]), included=o["included"], reason=_d_Reason(o["reason"]), tokens=o["tokens"], position=g("position"))
def _d_Change(o):
    g = o.get
    return Change(id=o["id"], origin=_d_Origin(o["origin"]), kind=_d_ChangeKind(o["kind"]), before=(None if (y := g("before")) is None else _d_EntryState(y)), after=(None if (y := g("after")) is None else _d_EntryState(y)))
def _d_SnapshotDiff(o):
    g = o.get
    return SnapshotDiff(before_id=o["before-id"], after_id=o["after-id"], status_before=[_d_SnapshotStatus(x) for x in (g("status-before") or [])], status_after=[_d_SnapshotStatus(x) for x in (g("status-after") or [])], tokens_before=o["tokens-before"], tokens_after=o["tokens-after"], changes=[_d_Change(x) for x in (g("changes") or [])], unchanged=o["unchanged"])
def _d_CtxpackError(o):
    if o.__class__ is str:
        return CtxpackError(o)
    ((tag, v),) = o.items()
    if tag == "invalid-field":
        return CtxpackError(tag, _d_FieldError(v))
    if tag == "mandatory-over-budget":
        return CtxpackError(tag, _d_MandatoryShortfall(v))
    if tag == "tokenizer-unavailable":
        return CtxpackError(tag, v)
    if tag == "host-failed":
        return CtxpackError(tag, _d_HostError(v))
    if tag == "step-mismatch":
        return CtxpackError(tag, v)
    return CtxpackError(tag, v)
def _d_AssemblyFailure(o):
    g = o.get
    return AssemblyFailure(error=_d_CtxpackError(o["error"]), snapshot=(None if (y := g("snapshot")) is None else _d_Snapshot(y)))
def _d_FieldError(o):
    g = o.get
    return FieldError(field=o["field"], message=o["message"])
def _d_MandatoryShortfall(o):
    g = o.get
    return MandatoryShortfall(mandatory_tokens=o["mandatory-tokens"], budget=o["budget"])
def _d_HostError(o):
    g = o.get
    return HostError(capability=o["capability"], message=o["message"])
def _d_BuilderConfig(o):
    g = o.get
    return BuilderConfig(preload=[_d_Tokenizer(x) for x in (g("preload") or [])], tokenizers=[_d_TokenizerFile(x) for x in (g("tokenizers") or [])], models=[_d_ModelProfile(x) for x in (g("models") or [])], profile=_d_Profile(o["profile"]), near_duplicate_threshold=o["near-duplicate-threshold"], ranking=_d_Ranking(o["ranking"]), plan=_d_Plan(o["plan"]), count_cache_entries=o["count-cache-entries"], fence_key=g("fence-key"))
def _d_Plan(o):
    g = o.get
    return Plan(default_budget=o["default-budget"], model_window=g("model-window"), safety_margin=o["safety-margin"], shares=[_d_SectionShare(x) for x in (g("shares") or [])], compress=o["compress"], min_summary_tokens=o["min-summary-tokens"], cut_step=o["cut-step"], cut_share=o["cut-share"], compact_share=o["compact-share"], compact_tokens=o["compact-tokens"], clear_at_least=o["clear-at-least"])
def _d_SectionShare(o):
    g = o.get
    return SectionShare(section=_d_Section(o["section"]), share=o["share"])
def _d_Ranking(o):
    g = o.get
    return Ranking(trust_system=o["trust-system"], trust_trusted=o["trust-trusted"], trust_unverified=o["trust-unverified"], trust_untrusted=o["trust-untrusted"], recency=o["recency"])
def _d_Profile(o):
    if o.__class__ is str:
        return Profile(o)
    ((tag, v),) = o.items()
    if tag == "rag":
        return Profile(tag, _d_RagSettings(v))
    if tag == "rag-memory":
        return Profile(tag, _d_RagMemorySettings(v))
    if tag == "full":
        return Profile(tag, _d_FullSettings(v))
    return Profile(tag, v)
def _d_FullSettings(o):
    g = o.get
    return FullSettings(retrieve_limit=o["retrieve-limit"], graph_depth=o["graph-depth"], memory_limit=o["memory-limit"], repository_state=o["repository-state"])
def _d_RagSettings(o):
    g = o.get
    return RagSettings(retrieve_limit=o["retrieve-limit"])
def _d_RagMemorySettings(o):
    g = o.get
    return RagMemorySettings(retrieve_limit=o["retrieve-limit"], memory_limit=o["memory-limit"])
def _d_RequestContext(o):
    g = o.get
    return RequestContext(user_query=o["user-query"], conversation_history=[_d_ConversationTurn(x) for x in (g("conversation-history") or [])], retrieved_context=[_d_PackEntry(x) for x in (g("retrieved-context") or [])], memory_items=[_d_PackEntry(x) for x in (g("memory-items") or [])], session_id=g("session-id"), trace_id=o["trace-id"], user_id=g("user-id"))
_d_ConfigFormat = ConfigFormat._value2member_map_.__getitem__
def _d_RuleScore(o):
    g = o.get
    return RuleScore(rule=o["rule"], weight=o["weight"], matched=g("matched"))
def _d_RouteScore(o):
    g = o.get
    return RouteScore(route=o["route"], score=o["score"], rules=[_d_RuleScore(x) for x in (g("rules") or [])])
def _d_Entity(o):
    g = o.get
    return Entity(name=o["name"], value=o["value"])
def _d_RoutingDecision(o):
    g = o.get
    return RoutingDecision(route=g("route"), skill=g("skill"), confidence=o["confidence"], threshold=o["threshold"], low_confidence=o["low-confidence"], reference_cue=g("reference-cue"), matched_entities=[_d_Entity(x) for x in (g("matched-entities") or [])], scores=[_d_RouteScore(x) for x in (g("scores") or [])])
def _d_SkillDispatch(o):
    g = o.get
    return SkillDispatch(route=o["route"], skill=o["skill"], matched_entities=[_d_Entity(x) for x in (g("matched-entities") or [])], context=_d_RequestContext(o["context"]))
def _d_FallbackDispatch(o):
    g = o.get
    return FallbackDispatch(context=_d_RequestContext(o["context"]), pack=_d_ContextPack(o["pack"]))
def _d_Dispatch(o):
    if o.__class__ is str:
        return Dispatch(o)
    ((tag, v),) = o.items()
    if tag == "skill":
        return Dispatch(tag, _d_SkillDispatch(v))
    if tag == "fallback":
        return Dispatch(tag, _d_FallbackDispatch(v))
    return Dispatch(tag, v)
def _d_Handling(o):
    g = o.get
    return Handling(decision=_d_RoutingDecision(o["decision"]), dispatch=_d_Dispatch(o["dispatch"]))
def _d_Verdict(o):
    if o.__class__ is str:
        return Verdict(o)
    ((tag, v),) = o.items()
    if tag == "redact":
        return Verdict(tag, v)
    if tag == "deny":
        return Verdict(tag, v)
    return Verdict(tag, v)
def _d_RetrieveRequest(o):
    g = o.get
    return RetrieveRequest(query=o["query"], limit=o["limit"])
def _d_ExpandGraphRequest(o):
    g = o.get
    return ExpandGraphRequest(item_ids=(g("item-ids") or []), depth=o["depth"])
def _d_RecallMemoryRequest(o):
    g = o.get
    return RecallMemoryRequest(user_id=o["user-id"], query=o["query"], limit=o["limit"])
def _d_ReviewRequest(o):
    g = o.get
    return ReviewRequest(items=[_d_Candidate(x) for x in (g("items") or [])])
def _d_CountTokensRequest(o):
    g = o.get
    return CountTokensRequest(tokenizer=o["tokenizer"], texts=(g("texts") or []))
def _d_CountMessagesRequest(o):
    g = o.get
    return CountMessagesRequest(tokenizer=o["tokenizer"], lists=[_d_MessageList(x) for x in (g("lists") or [])])
def _d_SplitTextRequest(o):
    g = o.get
    return SplitTextRequest(texts=(g("texts") or []))
def _d_SummarizeRequest(o):
    g = o.get
    return SummarizeRequest(requests=[_d_SummaryRequest(x) for x in (g("requests") or [])], tokenizer=_d_Tokenizer(o["tokenizer"]))
def _d_Call(o):
    if o.__class__ is str:
        return Call(o)
    ((tag, v),) = o.items()
    if tag == "retrieve":
        return Call(tag, _d_RetrieveRequest(v))
    if tag == "expand-graph":
        return Call(tag, _d_ExpandGraphRequest(v))
    if tag == "recall-memory":
        return Call(tag, _d_RecallMemoryRequest(v))
    if tag == "review":
        return Call(tag, _d_ReviewRequest(v))
    if tag == "summarize":
        return Call(tag, _d_SummarizeRequest(v))
    if tag == "count-tokens":
        return Call(tag, _d_CountTokensRequest(v))
    if tag == "count-messages":
        return Call(tag, _d_CountMessagesRequest(v))
    if tag == "split-text":
        return Call(tag, _d_SplitTextRequest(v))
    return Call(tag, v)

_DECODE = {
    "AgentContext": _d_AgentContext,
    "AssembleRequest": _d_AssembleRequest,
    "AssemblyFailure": _d_AssemblyFailure,
    "Assumed": _d_Assumed,
    "BlockRange": _d_BlockRange,
    "BuilderConfig": _d_BuilderConfig,
    "CacheBoundary": _d_CacheBoundary,
    "CachePrefix": _d_CachePrefix,
    "Call": _d_Call,
    "Candidate": _d_Candidate,
    "Change": _d_Change,
    "ChangeKind": _d_ChangeKind,
    "Chat": _d_Chat,
    "ChatReport": _d_ChatReport,
    "ChatRequest": _d_ChatRequest,
    "ChatShape": _d_ChatShape,
    "Compaction": _d_Compaction,
    "CompressionMetadata": _d_CompressionMetadata,
    "CompressionOutcome": _d_CompressionOutcome,
    "ConfigFormat": _d_ConfigFormat,
    "ContextAssembled": _d_ContextAssembled,
    "ContextPack": _d_ContextPack,
    "ConversationStart": _d_ConversationStart,
    "ConversationTurn": _d_ConversationTurn,
    "CountMessagesRequest": _d_CountMessagesRequest,
    "CountRequest": _d_CountRequest,
    "CountTokensRequest": _d_CountTokensRequest,
    "Counted": _d_Counted,
    "CtxpackError": _d_CtxpackError,
    "Dispatch": _d_Dispatch,
    "Entity": _d_Entity,
    "EntryRun": _d_EntryRun,
    "EntryState": _d_EntryState,
    "ExpandGraphRequest": _d_ExpandGraphRequest,
    "FallbackDispatch": _d_FallbackDispatch,
    "FenceReport": _d_FenceReport,
    "FieldError": _d_FieldError,
    "FullSettings": _d_FullSettings,
    "Handling": _d_Handling,
    "HostError": _d_HostError,
    "ImageRule": _d_ImageRule,
    "ImageTiles": _d_ImageTiles,
    "Layer": _d_Layer,
    "Layout": _d_Layout,
    "MandatoryShortfall": _d_MandatoryShortfall,
    "Message": _d_Message,
    "MessageList": _d_MessageList,
    "Metrics": _d_Metrics,
    "ModelProfile": _d_ModelProfile,
    "ModelUse": _d_ModelUse,
    "Origin": _d_Origin,
    "PackEntry": _d_PackEntry,
    "PackForm": _d_PackForm,
    "Partial": _d_Partial,
    "Plan": _d_Plan,
    "Profile": _d_Profile,
    "Provenance": _d_Provenance,
    "RagMemorySettings": _d_RagMemorySettings,
    "RagSettings": _d_RagSettings,
    "Ranking": _d_Ranking,
    "Reason": _d_Reason,
    "ReasonCount": _d_ReasonCount,
    "RecallMemoryRequest": _d_RecallMemoryRequest,
    "RequestContext": _d_RequestContext,
    "RetrieveRequest": _d_RetrieveRequest,
    "ReviewRequest": _d_ReviewRequest,
    "Role": _d_Role,
    "RouteScore": _d_RouteScore,
    "RoutingDecision": _d_RoutingDecision,
    "RuleScore": _d_RuleScore,
    "Section": _d_Section,
    "SectionCompression": _d_SectionCompression,
    "SectionShare": _d_SectionShare,
    "SectionTokens": _d_SectionTokens,
    "Shortfall": _d_Shortfall,
    "SkillDispatch": _d_SkillDispatch,
    "Snapshot": _d_Snapshot,
    "SnapshotDiff": _d_SnapshotDiff,
    "SnapshotEntry": _d_SnapshotEntry,
    "SnapshotStatus": _d_SnapshotStatus,
    "SourceCall": _d_SourceCall,
    "SourceOutcome": _d_SourceOutcome,
    "SplitTextRequest": _d_SplitTextRequest,
    "StageSummary": _d_StageSummary,
    "Strategy": _d_Strategy,
    "SummarizeRequest": _d_SummarizeRequest,
    "SummaryRequest": _d_SummaryRequest,
    "TextPieces": _d_TextPieces,
    "TextSplit": _d_TextSplit,
    "TokenCounts": _d_TokenCounts,
    "Tokenizer": _d_Tokenizer,
    "TokenizerFile": _d_TokenizerFile,
    "TrimRequest": _d_TrimRequest,
    "TrimStrategy": _d_TrimStrategy,
    "Trimmed": _d_Trimmed,
    "TrustTier": _d_TrustTier,
    "Verdict": _d_Verdict,
    "WorkflowStatus": _d_WorkflowStatus,
}

_SCHEMA = {
    "AgentContext": ("record", AgentContext, [("session_id", "session-id", ['option', 'string']), ("trace_id", "trace-id", 'string'), ("user_id", "user-id", ['option', 'string']), ("tenant_id", "tenant-id", ['option', 'string']), ("project_id", "project-id", ['option', 'string']), ("run_id", "run-id", ['option', 'string']), ("attempt_id", "attempt-id", ['option', 'string']), ("scopes", "scopes", ['list', 'string'])]),
    "Tokenizer": ("variant", Tokenizer, {"o200k-base": None, "cl100k-base": None, "chars-per-token": 'u32', "named": 'string', "host": 'string'}),
    "ModelProfile": ("record", ModelProfile, [("name", "name", 'string'), ("tokenizer", "tokenizer", ['ref', 'Tokenizer']), ("context_window", "context-window", 'u32'), ("output_reserve", "output-reserve", 'u32'), ("message_overhead", "message-overhead", 'u32'), ("reply_overhead", "reply-overhead", 'u32'), ("cache_min_tokens", "cache-min-tokens", ['option', 'u32']), ("images", "images", ['option', ['ref', 'ImageRule']])]),
    "ImageRule": ("variant", ImageRule, {"tiles": ['ref', 'ImageTiles'], "patches": 'f64', "pixels": None, "gemini-tiles": None, "none": None}),
    "ImageTiles": ("record", ImageTiles, [("base", "base", 'u32'), ("tile", "tile", 'u32')]),
    "Assumed": ("enum", Assumed),
    "ModelUse": ("record", ModelUse, [("profile", "profile", ['ref', 'ModelProfile']), ("assumed", "assumed", ['list', ['ref', 'Assumed']])]),
    "TokenizerFile": ("record", TokenizerFile, [("name", "name", 'string'), ("text", "text", 'string'), ("pattern", "pattern", ['option', 'string'])]),
    "Layer": ("enum", Layer),
    "Section": ("enum", Section),
    "TrustTier": ("enum", TrustTier),
    "Provenance": ("record", Provenance, [("source_kind", "source-kind", 'string'), ("reference", "reference", 'string'), ("source_version", "source-version", ['option', 'string']), ("index_revision", "index-revision", ['option', 'string'])]),
    "Role": ("enum", Role),
    "ConversationTurn": ("record", ConversationTurn, [("role", "role", ['ref', 'Role']), ("content", "content", 'string'), ("tool_call_id", "tool-call-id", ['option', 'string']), ("attached_tokens", "attached-tokens", ['option', 'u32'])]),
    "ConversationStart": ("enum", ConversationStart),
    "PackForm": ("enum", PackForm),
    "Layout": ("enum", Layout),
    "WorkflowStatus": ("record", WorkflowStatus, [("status", "status", 'string'), ("stage_id", "stage-id", ['option', 'string'])]),
    "StageSummary": ("record", StageSummary, [("stage_id", "stage-id", 'string'), ("outcome", "outcome", 'string'), ("summary", "summary", 'string')]),
    "Candidate": ("record", Candidate, [("id", "id", 'string'), ("section", "section", ['ref', 'Section']), ("text", "text", 'string'), ("provenance", "provenance", ['option', ['ref', 'Provenance']]), ("trust", "trust", ['ref', 'TrustTier']), ("score", "score", ['option', 'f64']), ("sequence", "sequence", ['option', 'u64']), ("scope", "scope", ['option', 'string']), ("token_count", "token-count", ['option', 'u32'])]),
    "AssembleRequest": ("record", AssembleRequest, [("context", "context", ['ref', 'AgentContext']), ("query", "query", 'string'), ("model", "model", ['option', 'string']), ("tokenizer", "tokenizer", ['option', ['ref', 'Tokenizer']]), ("budget", "budget", ['option', 'u32']), ("entry_overhead", "entry-overhead", ['option', 'u32']), ("reply_overhead", "reply-overhead", ['option', 'u32']), ("system_prompt", "system-prompt", 'string'), ("workflow", "workflow", ['option', ['ref', 'WorkflowStatus']]), ("instructions", "instructions", ['list', 'string']), ("current_task", "current-task", ['option', 'string']), ("conversation", "conversation", ['list', ['ref', 'ConversationTurn']]), ("chat", "chat", ['option', ['ref', 'Chat']]), ("keep_last", "keep-last", 'u32'), ("conversation_start", "conversation-start", ['option', ['ref', 'ConversationStart']]), ("form", "form", ['option', ['ref', 'PackForm']]), ("layout", "layout", ['option', ['ref', 'Layout']]), ("stage_summaries", "stage-summaries", ['list', ['ref', 'StageSummary']]), ("compaction", "compaction", ['option', ['ref', 'Compaction']])]),
    "ChatShape": ("enum", ChatShape),
    "Chat": ("record", Chat, [("shape", "shape", ['ref', 'ChatShape']), ("messages", "messages", 'string')]),
    "CountRequest": ("record", CountRequest, [("model", "model", ['option', 'string']), ("tokenizer", "tokenizer", ['option', ['ref', 'Tokenizer']]), ("entry_overhead", "entry-overhead", ['option', 'u32']), ("reply_overhead", "reply-overhead", ['option', 'u32']), ("texts", "texts", ['list', 'string']), ("chat", "chat", ['option', ['ref', 'Chat']])]),
    "TokenCounts": ("record", TokenCounts, [("tokenizer", "tokenizer", ['option', ['ref', 'Tokenizer']]), ("model", "model", ['option', ['ref', 'ModelUse']]), ("texts", "texts", ['list', 'u32']), ("system", "system", 'u32'), ("messages", "messages", ['list', 'u32']), ("turns", "turns", ['list', 'u32']), ("total", "total", 'u64')]),
    "TrimStrategy": ("enum", TrimStrategy),
    "TextSplit": ("enum", TextSplit),
    "TrimRequest": ("record", TrimRequest, [("chat", "chat", ['ref', 'Chat']), ("max_tokens", "max-tokens", 'u32'), ("model", "model", ['option', 'string']), ("tokenizer", "tokenizer", ['option', ['ref', 'Tokenizer']]), ("entry_overhead", "entry-overhead", ['option', 'u32']), ("reply_overhead", "reply-overhead", ['option', 'u32']), ("strategy", "strategy", ['ref', 'TrimStrategy']), ("include_system", "include-system", 'bool'), ("start_on", "start-on", ['list', ['ref', 'Role']]), ("end_on", "end-on", ['list', ['ref', 'Role']]), ("allow_partial", "allow-partial", 'bool'), ("split", "split", ['ref', 'TextSplit'])]),
    "Partial": ("record", Partial, [("message", "message", 'u32'), ("blocks", "blocks", ['option', ['ref', 'BlockRange']]), ("text", "text", ['option', 'string'])]),
    "BlockRange": ("record", BlockRange, [("first", "first", 'u32'), ("count", "count", 'u32')]),
    "MessageList": ("record", MessageList, [("messages", "messages", ['list', 'u32']), ("cut", "cut", ['option', ['ref', 'Partial']])]),
    "TextPieces": ("record", TextPieces, [("pieces", "pieces", ['list', 'string'])]),
    "Trimmed": ("record", Trimmed, [("kept", "kept", ['list', 'u32']), ("partial", "partial", ['option', ['ref', 'Partial']]), ("messages", "messages", 'string'), ("tokens", "tokens", 'u64')]),
    "ChatRequest": ("record", ChatRequest, [("shape", "shape", ['ref', 'ChatShape']), ("body", "body", 'string'), ("sources", "sources", ['list', ['option', 'u32']])]),
    "ChatReport": ("record", ChatReport, [("shape", "shape", ['ref', 'ChatShape']), ("turns", "turns", ['list', 'u32']), ("bounded", "bounded", ['list', 'string'])]),
    "Compaction": ("record", Compaction, [("summary", "summary", 'string'), ("turns", "turns", 'u32'), ("cleared", "cleared", 'u32'), ("hash", "hash", 'string')]),
    "PackEntry": ("record", PackEntry, [("id", "id", 'string'), ("layer", "layer", ['ref', 'Layer']), ("section", "section", ['ref', 'Section']), ("role", "role", ['ref', 'Role']), ("text", "text", 'string'), ("tokens", "tokens", 'u32'), ("provenance", "provenance", ['ref', 'Provenance']), ("trust", "trust", ['ref', 'TrustTier'])]),
    "Strategy": ("enum", Strategy),
    "CompressionMetadata": ("record", CompressionMetadata, [("applied_strategies", "applied-strategies", ['list', ['ref', 'Strategy']]), ("truncated_layers", "truncated-layers", ['list', ['ref', 'Layer']]), ("entries_dropped", "entries-dropped", 'u32')]),
    "Reason": ("variant", Reason, {"mandatory": None, "within-budget": None, "keep-last": 'u32', "over-budget": ['ref', 'Shortfall'], "evicted-oldest": None, "tool-pair": 'string', "orphan-tool-result": None, "duplicate-of": 'string', "policy-denied": 'string', "out-of-scope": None, "no-provenance": None, "section-not-allowed": None, "summarized": 'string', "step-cut": 'u32', "beyond-limit": 'u32', "assembly-failed": None, "unreviewed": None, "before-user-turn": None}),
    "Shortfall": ("record", Shortfall, [("needed", "needed", 'u64'), ("remaining", "remaining", 'u64')]),
    "SnapshotStatus": ("enum", SnapshotStatus),
    "SnapshotEntry": ("record", SnapshotEntry, [("id", "id", 'string'), ("layer", "layer", ['ref', 'Layer']), ("section", "section", ['ref', 'Section']), ("origin", "origin", ['ref', 'Origin']), ("provenance", "provenance", ['option', ['ref', 'Provenance']]), ("trust", "trust", ['ref', 'TrustTier']), ("score", "score", ['option', 'f64']), ("tokens", "tokens", 'u32'), ("counted", "counted", ['ref', 'Counted']), ("included", "included", 'bool'), ("reason", "reason", ['ref', 'Reason']), ("compressed", "compressed", 'bool'), ("redacted", "redacted", 'bool'), ("run", "run", ['option', ['ref', 'EntryRun']])]),
    "EntryRun": ("record", EntryRun, [("last_id", "last-id", 'string'), ("count", "count", 'u32')]),
    "Counted": ("enum", Counted),
    "Origin": ("enum", Origin),
    "SummaryRequest": ("record", SummaryRequest, [("section", "section", ['ref', 'Section']), ("text", "text", 'string'), ("target_tokens", "target-tokens", 'u32')]),
    "SourceCall": ("record", SourceCall, [("capability", "capability", 'string'), ("outcome", "outcome", ['ref', 'SourceOutcome'])]),
    "SourceOutcome": ("variant", SourceOutcome, {"answered": 'u32', "failed": 'string', "skipped": 'string'}),
    "SectionCompression": ("record", SectionCompression, [("section", "section", ['ref', 'Section']), ("target_tokens", "target-tokens", 'u32'), ("outcome", "outcome", ['ref', 'CompressionOutcome'])]),
    "CompressionOutcome": ("variant", CompressionOutcome, {"summarized": 'u32', "cut": 'string', "skipped": 'string', "whole": 'string'}),
    "FenceReport": ("record", FenceReport, [("keyed", "keyed", 'bool'), ("stripped", "stripped", ['list', 'string']), ("defused", "defused", ['list', 'string']), ("context_role", "context-role", ['option', ['ref', 'Role']]), ("quoted_lines", "quoted-lines", 'u32')]),
    "Snapshot": ("record", Snapshot, [("id", "id", 'string'), ("tenant_id", "tenant-id", ['option', 'string']), ("project_id", "project-id", ['option', 'string']), ("run_id", "run-id", ['option', 'string']), ("attempt_id", "attempt-id", ['option', 'string']), ("scopes", "scopes", ['list', 'string']), ("tokenizer", "tokenizer", ['ref', 'Tokenizer']), ("model", "model", ['option', ['ref', 'ModelUse']]), ("token_budget", "token-budget", 'u32'), ("tokens_used", "tokens-used", 'u32'), ("text_tokens", "text-tokens", 'u32'), ("message_tokens", "message-tokens", 'u32'), ("stable_prefix_tokens", "stable-prefix-tokens", 'u32'), ("cache_prefixes", "cache-prefixes", ['list', ['ref', 'CachePrefix']]), ("content_hash", "content-hash", 'string'), ("index_revisions", "index-revisions", ['list', 'string']), ("memory_items", "memory-items", ['list', 'string']), ("status", "status", ['list', ['ref', 'SnapshotStatus']]), ("failure", "failure", ['option', 'string']), ("profile", "profile", ['ref', 'Profile']), ("plan", "plan", ['ref', 'Plan']), ("source_calls", "source-calls", ['list', ['ref', 'SourceCall']]), ("compressions", "compressions", ['list', ['ref', 'SectionCompression']]), ("fence", "fence", ['ref', 'FenceReport']), ("chat", "chat", ['option', ['ref', 'ChatReport']]), ("entries", "entries", ['list', ['ref', 'SnapshotEntry']])]),
    "CacheBoundary": ("enum", CacheBoundary),
    "CachePrefix": ("record", CachePrefix, [("boundary", "boundary", ['ref', 'CacheBoundary']), ("messages", "messages", 'u32'), ("tokens", "tokens", 'u32'), ("hash", "hash", 'string'), ("cacheable", "cacheable", 'bool')]),
    "ContextPack": ("record", ContextPack, [("id", "id", 'string'), ("session_id", "session-id", ['option', 'string']), ("cache_key", "cache-key", ['option', 'string']), ("trace_id", "trace-id", 'string'), ("stage_id", "stage-id", ['option', 'string']), ("entries", "entries", ['list', ['ref', 'PackEntry']]), ("text", "text", 'string'), ("messages", "messages", ['list', ['ref', 'Message']]), ("budget_used", "budget-used", 'u32'), ("budget_limit", "budget-limit", 'u32'), ("compaction", "compaction", ['option', ['ref', 'Compaction']]), ("chat", "chat", ['option', ['ref', 'ChatRequest']]), ("compression", "compression", ['ref', 'CompressionMetadata']), ("snapshot", "snapshot", ['ref', 'Snapshot']), ("event", "event", ['ref', 'ContextAssembled']), ("metrics", "metrics", ['ref', 'Metrics'])]),
    "Message": ("record", Message, [("role", "role", ['ref', 'Role']), ("content", "content", 'string'), ("tool_call_id", "tool-call-id", ['option', 'string']), ("attached_tokens", "attached-tokens", ['option', 'u32'])]),
    "ContextAssembled": ("record", ContextAssembled, [("context_snapshot_id", "context-snapshot-id", 'string'), ("tenant_id", "tenant-id", ['option', 'string']), ("run_id", "run-id", ['option', 'string']), ("attempt_id", "attempt-id", ['option', 'string']), ("status", "status", ['list', ['ref', 'SnapshotStatus']]), ("tokens_used", "tokens-used", 'u32'), ("token_budget", "token-budget", 'u32')]),
    "Metrics": ("record", Metrics, [("tokens_per_section", "tokens-per-section", ['list', ['ref', 'SectionTokens']]), ("dropped_by_reason", "dropped-by-reason", ['list', ['ref', 'ReasonCount']])]),
    "SectionTokens": ("record", SectionTokens, [("section", "section", ['ref', 'Section']), ("tokens", "tokens", 'u32')]),
    "ReasonCount": ("record", ReasonCount, [("reason", "reason", 'string'), ("count", "count", 'u32')]),
    "ChangeKind": ("enum", ChangeKind),
    "EntryState": ("record", EntryState, [("section", "section", ['ref', 'Section']), ("included", "included", 'bool'), ("reason", "reason", ['ref', 'Reason']), ("tokens", "tokens", 'u32'), ("position", "position", ['option', 'u32'])]),
    "Change": ("record", Change, [("id", "id", 'string'), ("origin", "origin", ['ref', 'Origin']), ("kind", "kind", ['ref', 'ChangeKind']), ("before", "before", ['option', ['ref', 'EntryState']]), ("after", "after", ['option', ['ref', 'EntryState']])]),
    "SnapshotDiff": ("record", SnapshotDiff, [("before_id", "before-id", 'string'), ("after_id", "after-id", 'string'), ("status_before", "status-before", ['list', ['ref', 'SnapshotStatus']]), ("status_after", "status-after", ['list', ['ref', 'SnapshotStatus']]), ("tokens_before", "tokens-before", 'u32'), ("tokens_after", "tokens-after", 'u32'), ("changes", "changes", ['list', ['ref', 'Change']]), ("unchanged", "unchanged", 'u32')]),
    "CtxpackError": ("variant", CtxpackError, {"invalid-field": ['ref', 'FieldError'], "mandatory-over-budget": ['ref', 'MandatoryShortfall'], "tokenizer-unavailable": 'string', "host-failed": ['ref', 'HostError'], "step-mismatch": 'string'}),
    "AssemblyFailure": ("record", AssemblyFailure, [("error", "error", ['ref', 'CtxpackError']), ("snapshot", "snapshot", ['option', ['ref', 'Snapshot']])]),
    "FieldError": ("record", FieldError, [("field", "field", 'string'), ("message", "message", 'string')]),
    "MandatoryShortfall": ("record", MandatoryShortfall, [("mandatory_tokens", "mandatory-tokens", 'u64'), ("budget", "budget", 'u32')]),
    "HostError": ("record", HostError, [("capability", "capability", 'string'), ("message", "message", 'string')]),
    "BuilderConfig": ("record", BuilderConfig, [("preload", "preload", ['list', ['ref', 'Tokenizer']]), ("tokenizers", "tokenizers", ['list', ['ref', 'TokenizerFile']]), ("models", "models", ['list', ['ref', 'ModelProfile']]), ("profile", "profile", ['ref', 'Profile']), ("near_duplicate_threshold", "near-duplicate-threshold", 'f64'), ("ranking", "ranking", ['ref', 'Ranking']), ("plan", "plan", ['ref', 'Plan']), ("count_cache_entries", "count-cache-entries", 'u32'), ("fence_key", "fence-key", ['option', 'string'])]),
    "Plan": ("record", Plan, [("default_budget", "default-budget", 'u32'), ("model_window", "model-window", ['option', 'u32']), ("safety_margin", "safety-margin", 'f64'), ("shares", "shares", ['list', ['ref', 'SectionShare']]), ("compress", "compress", 'bool'), ("min_summary_tokens", "min-summary-tokens", 'u32'), ("cut_step", "cut-step", 'u32'), ("cut_share", "cut-share", 'f64'), ("compact_share", "compact-share", 'f64'), ("compact_tokens", "compact-tokens", 'u32'), ("clear_at_least", "clear-at-least", 'u32')]),
    "SectionShare": ("record", SectionShare, [("section", "section", ['ref', 'Section']), ("share", "share", 'f64')]),
    "Ranking": ("record", Ranking, [("trust_system", "trust-system", 'f64'), ("trust_trusted", "trust-trusted", 'f64'), ("trust_unverified", "trust-unverified", 'f64'), ("trust_untrusted", "trust-untrusted", 'f64'), ("recency", "recency", 'f64')]),
    "Profile": ("variant", Profile, {"passthrough": None, "rag": ['ref', 'RagSettings'], "rag-memory": ['ref', 'RagMemorySettings'], "full": ['ref', 'FullSettings']}),
    "FullSettings": ("record", FullSettings, [("retrieve_limit", "retrieve-limit", 'u32'), ("graph_depth", "graph-depth", 'u32'), ("memory_limit", "memory-limit", 'u32'), ("repository_state", "repository-state", 'bool')]),
    "RagSettings": ("record", RagSettings, [("retrieve_limit", "retrieve-limit", 'u32')]),
    "RagMemorySettings": ("record", RagMemorySettings, [("retrieve_limit", "retrieve-limit", 'u32'), ("memory_limit", "memory-limit", 'u32')]),
    "RequestContext": ("record", RequestContext, [("user_query", "user-query", 'string'), ("conversation_history", "conversation-history", ['list', ['ref', 'ConversationTurn']]), ("retrieved_context", "retrieved-context", ['list', ['ref', 'PackEntry']]), ("memory_items", "memory-items", ['list', ['ref', 'PackEntry']]), ("session_id", "session-id", ['option', 'string']), ("trace_id", "trace-id", 'string'), ("user_id", "user-id", ['option', 'string'])]),
    "ConfigFormat": ("enum", ConfigFormat),
    "RuleScore": ("record", RuleScore, [("rule", "rule", 'string'), ("weight", "weight", 'f64'), ("matched", "matched", ['option', 'string'])]),
    "RouteScore": ("record", RouteScore, [("route", "route", 'string'), ("score", "score", 'f64'), ("rules", "rules", ['list', ['ref', 'RuleScore']])]),
    "Entity": ("record", Entity, [("name", "name", 'string'), ("value", "value", 'string')]),
    "RoutingDecision": ("record", RoutingDecision, [("route", "route", ['option', 'string']), ("skill", "skill", ['option', 'string']), ("confidence", "confidence", 'f64'), ("threshold", "threshold", 'f64'), ("low_confidence", "low-confidence", 'bool'), ("reference_cue", "reference-cue", ['option', 'string']), ("matched_entities", "matched-entities", ['list', ['ref', 'Entity']]), ("scores", "scores", ['list', ['ref', 'RouteScore']])]),
    "SkillDispatch": ("record", SkillDispatch, [("route", "route", 'string'), ("skill", "skill", 'string'), ("matched_entities", "matched-entities", ['list', ['ref', 'Entity']]), ("context", "context", ['ref', 'RequestContext'])]),
    "FallbackDispatch": ("record", FallbackDispatch, [("context", "context", ['ref', 'RequestContext']), ("pack", "pack", ['ref', 'ContextPack'])]),
    "Dispatch": ("variant", Dispatch, {"skill": ['ref', 'SkillDispatch'], "fallback": ['ref', 'FallbackDispatch']}),
    "Handling": ("record", Handling, [("decision", "decision", ['ref', 'RoutingDecision']), ("dispatch", "dispatch", ['ref', 'Dispatch'])]),
    "Verdict": ("variant", Verdict, {"allow": None, "redact": 'string', "deny": 'string'}),
    "RetrieveRequest": ("record", RetrieveRequest, [("query", "query", 'string'), ("limit", "limit", 'u32')]),
    "ExpandGraphRequest": ("record", ExpandGraphRequest, [("item_ids", "item-ids", ['list', 'string']), ("depth", "depth", 'u32')]),
    "RecallMemoryRequest": ("record", RecallMemoryRequest, [("user_id", "user-id", 'string'), ("query", "query", 'string'), ("limit", "limit", 'u32')]),
    "ReviewRequest": ("record", ReviewRequest, [("items", "items", ['list', ['ref', 'Candidate']])]),
    "CountTokensRequest": ("record", CountTokensRequest, [("tokenizer", "tokenizer", 'string'), ("texts", "texts", ['list', 'string'])]),
    "CountMessagesRequest": ("record", CountMessagesRequest, [("tokenizer", "tokenizer", 'string'), ("lists", "lists", ['list', ['ref', 'MessageList']])]),
    "SplitTextRequest": ("record", SplitTextRequest, [("texts", "texts", ['list', 'string'])]),
    "SummarizeRequest": ("record", SummarizeRequest, [("requests", "requests", ['list', ['ref', 'SummaryRequest']]), ("tokenizer", "tokenizer", ['ref', 'Tokenizer'])]),
    "Call": ("variant", Call, {"retrieve": ['ref', 'RetrieveRequest'], "expand-graph": ['ref', 'ExpandGraphRequest'], "recall-memory": ['ref', 'RecallMemoryRequest'], "repository-state": None, "review": ['ref', 'ReviewRequest'], "summarize": ['ref', 'SummarizeRequest'], "count-tokens": ['ref', 'CountTokensRequest'], "count-messages": ['ref', 'CountMessagesRequest'], "split-text": ['ref', 'SplitTextRequest']}),
}

# The codec reads the tables from here: it never imports this module.
register(_SCHEMA, _DECODE)
