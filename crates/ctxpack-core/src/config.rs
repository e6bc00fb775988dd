//! How a builder is configured: its profile (which host sources it asks),
//! its ranking terms, and the plan that shares the budget among sections.
//! Every default is in [`crate::defaults`].

use crate::defaults;
use crate::types::{ModelProfile, Section, Tokenizer, TrustTier};
use serde::{Deserialize, Serialize};

/// What a builder is constructed from. Its `Debug` form does not show the
/// fence key.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct BuilderConfig {
    /// Tokenizers the builder must have: checked at construction, so a
    /// build that left one out refuses the builder at once. (Their tables
    /// are static; there is nothing left to build ahead.)
    #[serde(default)]
    pub preload: Vec<Tokenizer>,
    /// Tokenizer files the model ships, read once when the builder is
    /// made; a request names one as `Tokenizer::Named`.
    #[serde(default)]
    pub tokenizers: Vec<TokenizerFile>,
    /// Model profiles added to the built-in ones (one of the same name
    /// replaces it): what a request that names the model assumes.
    #[serde(default)]
    pub models: Vec<ModelProfile>,
    /// Which host sources the builder asks for candidates.
    #[serde(default)]
    pub profile: Profile,
    /// Estimated Jaccard similarity (of three-word shingles) at which a host
    /// candidate is a near-duplicate of a higher-ranked one, in (0, 1];
    /// 1 keeps exact duplicate detection only.
    #[serde(default = "default_near_threshold")]
    pub near_duplicate_threshold: f64,
    /// Terms added to the fused rank score; all zero (the default) ranks
    /// by reciprocal-rank fusion alone.
    #[serde(default)]
    pub ranking: Ranking,
    /// Budget defaults, the model window and the sections' shares.
    #[serde(default)]
    pub plan: Plan,
    /// Most token counts the builder keeps between assemblies (keyed by a
    /// hash of the text and the tokenizer), so a conversation re-assembled
    /// every turn recounts only its new text; 0 keeps none.
    #[serde(default = "default_count_cache_entries")]
    pub count_cache_entries: u32,
    /// A secret (at least 16 bytes) the fences' nonce is a keyed MAC under,
    /// so that no store can name the closing marker of a fence it writes
    /// into; without one the nonce is a hash of the request's context,
    /// which a store that knows the context can compute, and the snapshot
    /// says the fence is unkeyed. The same key and context give the same
    /// nonce, so packs stay deterministic and prompt caches hit.
    #[serde(default)]
    pub fence_key: Option<String>,
}

impl std::fmt::Debug for BuilderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuilderConfig")
            .field("preload", &self.preload)
            .field("tokenizers", &self.tokenizers)
            .field("models", &self.models)
            .field("profile", &self.profile)
            .field("near_duplicate_threshold", &self.near_duplicate_threshold)
            .field("ranking", &self.ranking)
            .field("plan", &self.plan)
            .field("count_cache_entries", &self.count_cache_entries)
            .field("fence_key", &self.fence_key.as_ref().map(|_| "(secret)"))
            .finish()
    }
}

/// A tokenizer file a builder reads (see [`crate::LoadedTokenizer`] for
/// the kinds it reads). Its `Debug` form shows the name, the pattern and
/// the text's length, not the text.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct TokenizerFile {
    /// The name requests count with it under: `{"named": "llama-3"}`.
    pub name: String,
    /// The file's text: a Hugging Face `tokenizer.json` with a byte-level
    /// BPE model, Mistral's `tekken.json`, or a tiktoken rank file (each
    /// is UTF-8 text).
    pub text: String,
    /// A tiktoken rank file's pattern, which the file does not name:
    /// `o200k`, `cl100k`, `llama3`, `qwen`, `qwen3.5`, `tekken`, or its
    /// regular expression. None for the JSON files, which carry theirs.
    #[serde(default)]
    pub pattern: Option<String>,
}

impl std::fmt::Debug for TokenizerFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenizerFile")
            .field("name", &self.name)
            .field("text", &format_args!("({} bytes)", self.text.len()))
            .field("pattern", &self.pattern)
            .finish()
    }
}

fn default_count_cache_entries() -> u32 {
    defaults::COUNT_CACHE_ENTRIES
}

/// The plan of an assembly: the budget, the model window, and how the
/// budget is shared among sections.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Plan {
    /// The budget of a request that names none.
    #[serde(default = "Plan::default_budget")]
    pub default_budget: u32,
    /// The model's context window; a budget may not exceed it less the
    /// safety margin.
    #[serde(default)]
    pub model_window: Option<u32>,
    /// Share of the window kept free, in [0, 1).
    #[serde(default = "Plan::default_safety_margin")]
    pub safety_margin: f64,
    /// Each section's share of the budget, in [0, 1], summing to at most 1.
    /// A section left out has no share of its own and is filled only from
    /// what other sections leave unused.
    #[serde(default = "Plan::default_shares")]
    pub shares: Vec<SectionShare>,
    /// Whether an optional section over its share is summarised (through
    /// `summarizer.summarize`, else truncated) instead of cut.
    #[serde(default = "Plan::default_compress")]
    pub compress: bool,
    /// The fewest tokens a summary must be able to have for the
    /// summariser to be asked (32 by default): a section whose room, less
    /// the entry overhead and the summary's citation or fence, is smaller
    /// is not compressed, and the snapshot's `compressions` says so.
    #[serde(default = "Plan::default_min_summary")]
    pub min_summary_tokens: u32,
    /// The first kept conversation turn (and stage summary) moves in steps
    /// of this many, so the rendered text stays byte-stable across the
    /// turns of a growing conversation and providers' prompt caches hit; a
    /// few more old turns are left out in exchange. 1 moves it by one.
    #[serde(default = "Plan::default_cut_step")]
    pub cut_step: u32,
    /// In a cache-first layout, the share of the budget the conversation
    /// gives way by at a time (its text taken at 4 bytes a token): its
    /// first kept turn is one where the conversation before it filled a
    /// whole number of such steps, or of their half or quarter where none
    /// fits. 0 gives way turn by turn.
    #[serde(default = "Plan::default_cut_share")]
    pub cut_share: f64,
    /// When the conversation since its summary (its text taken at 4 bytes
    /// a token) passes this share of the budget, its oldest tool results
    /// are cleared and, if it is still past, its oldest turns summarised,
    /// until about half of it is left. 0 never
    /// compacts.
    #[serde(default)]
    pub compact_share: f64,
    /// The most tokens of the conversation's summary; 0 only clears tool
    /// results.
    #[serde(default = "Plan::default_compact_tokens")]
    pub compact_tokens: u32,
    /// Tool results are cleared only when that frees at least this many
    /// tokens at once; 0 clears none.
    #[serde(default)]
    pub clear_at_least: u32,
}

impl BuilderConfig {
    /// The configuration with its numbers as every host spells them (−0
    /// is 0; see `digest::canonical`).
    pub(crate) fn canonical(mut self) -> Self {
        use crate::digest::canonical;
        self.near_duplicate_threshold = canonical(self.near_duplicate_threshold);
        for (_, w) in self.ranking.weights_mut() {
            *w = canonical(*w);
        }
        self.plan.safety_margin = canonical(self.plan.safety_margin);
        self.plan.cut_share = canonical(self.plan.cut_share);
        self.plan.compact_share = canonical(self.plan.compact_share);
        for s in &mut self.plan.shares {
            s.share = canonical(s.share);
        }
        self
    }
}

impl Plan {
    fn default_budget() -> u32 {
        defaults::BUDGET
    }
    fn default_safety_margin() -> f64 {
        defaults::SAFETY_MARGIN
    }
    fn default_compress() -> bool {
        defaults::COMPRESS
    }
    fn default_min_summary() -> u32 {
        defaults::MIN_SUMMARY_TOKENS
    }
    fn default_cut_step() -> u32 {
        defaults::CUT_STEP
    }
    fn default_cut_share() -> f64 {
        defaults::CUT_SHARE
    }
    fn default_compact_tokens() -> u32 {
        defaults::COMPACT_TOKENS
    }
    /// [`defaults::SHARES`], as a plan holds them.
    pub fn default_shares() -> Vec<SectionShare> {
        defaults::SHARES
            .into_iter()
            .map(|(section, share)| SectionShare { section, share })
            .collect()
    }

    /// The largest budget the model window allows, if the plan names one.
    pub fn window_limit(&self) -> Option<u32> {
        self.model_window.map(|w| self.limit_of(w))
    }

    /// The largest budget a model window of `window` tokens allows.
    pub(crate) fn limit_of(&self, window: u32) -> u32 {
        (f64::from(window) * (1.0 - self.safety_margin)).floor() as u32
    }

    /// The share of `section` (0 when it has none).
    pub fn share(&self, section: Section) -> f64 {
        self.shares
            .iter()
            .find(|s| s.section == section)
            .map_or(0.0, |s| s.share)
    }
}

impl Default for Plan {
    fn default() -> Self {
        Plan {
            default_budget: Plan::default_budget(),
            model_window: None,
            safety_margin: Plan::default_safety_margin(),
            shares: Plan::default_shares(),
            compress: defaults::COMPRESS,
            min_summary_tokens: Plan::default_min_summary(),
            cut_step: Plan::default_cut_step(),
            cut_share: Plan::default_cut_share(),
            compact_share: 0.0,
            compact_tokens: Plan::default_compact_tokens(),
            clear_at_least: 0,
        }
    }
}

/// One section's share of the budget.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct SectionShare {
    /// The section.
    pub section: Section,
    /// Its share, in [0, 1].
    pub share: f64,
}

/// Terms of the fused score besides reciprocal-rank fusion (which adds at
/// most 1/61 per source, so weights of about 0.01 already reorder).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Ranking {
    /// Added for a `system` candidate.
    #[serde(default)]
    pub trust_system: f64,
    /// Added for a `trusted` candidate.
    #[serde(default)]
    pub trust_trusted: f64,
    /// Added for an `unverified` candidate.
    #[serde(default)]
    pub trust_unverified: f64,
    /// Added for an `untrusted` candidate.
    #[serde(default)]
    pub trust_untrusted: f64,
    /// Times the recency (1 for the newest `sequence`, 0 for the oldest,
    /// 0 without one).
    #[serde(default)]
    pub recency: f64,
}

impl Ranking {
    /// Every weight, named as the WIT names it (`trust-system`, …), to
    /// read or change in place: the one list of them, so a weight added
    /// is validated, canonicalised and generated with the rest.
    pub fn weights_mut(&mut self) -> [(&'static str, &mut f64); 5] {
        [
            ("trust-system", &mut self.trust_system),
            ("trust-trusted", &mut self.trust_trusted),
            ("trust-unverified", &mut self.trust_unverified),
            ("trust-untrusted", &mut self.trust_untrusted),
            ("recency", &mut self.recency),
        ]
    }

    /// The trust term of a tier.
    pub fn trust(&self, tier: TrustTier) -> f64 {
        match tier {
            TrustTier::System => self.trust_system,
            TrustTier::Trusted => self.trust_trusted,
            TrustTier::Unverified => self.trust_unverified,
            TrustTier::Untrusted => self.trust_untrusted,
        }
    }
}

fn default_near_threshold() -> f64 {
    defaults::NEAR_DUPLICATE_THRESHOLD
}

impl Default for BuilderConfig {
    fn default() -> Self {
        BuilderConfig {
            preload: Vec::new(),
            tokenizers: Vec::new(),
            models: Vec::new(),
            profile: Profile::default(),
            near_duplicate_threshold: default_near_threshold(),
            ranking: Ranking::default(),
            plan: Plan::default(),
            count_cache_entries: default_count_cache_entries(),
            fence_key: None,
        }
    }
}

/// What a builder gathers from its host: one builder interface from no
/// sources at all up to every source.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// No retrieval: the pack holds what the request carries.
    #[default]
    Passthrough,
    /// Retrieval through `sources.retrieve`.
    Rag(RagSettings),
    /// Retrieval, plus long-term memory through `sources.recall-memory`,
    /// scoped by the user id (skipped, and recorded so, without one).
    RagMemory(RagMemorySettings),
    /// Every source: retrieval, graph expansion from what was
    /// retrieved, long-term memory (with a user id) and repository state.
    Full(FullSettings),
}

/// Settings of the `full` profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct FullSettings {
    /// Most candidates to ask `sources.retrieve` for.
    pub retrieve_limit: u32,
    /// Most graph hops from the retrieved items (0: no expansion).
    pub graph_depth: u32,
    /// Most memory items to ask `sources.recall-memory` for.
    pub memory_limit: u32,
    /// Whether to ask `sources.repository-state`.
    pub repository_state: bool,
}

/// Settings of the `rag` profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RagSettings {
    /// Most candidates to ask `sources.retrieve` for.
    pub retrieve_limit: u32,
}

/// Settings of the `rag-memory` profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RagMemorySettings {
    /// Most candidates to ask `sources.retrieve` for.
    pub retrieve_limit: u32,
    /// Most memory items to ask `sources.recall-memory` for.
    pub memory_limit: u32,
}
