//! Scenarios generated over the whole input space the WIT allows: every
//! tokenizer, profile and section, budgets from zero to `u32::MAX`, entry
//! overheads up to `u32::MAX`, texts empty, tiny, awkward (punctuation that
//! takes the newlines after it, runs of spaces, fences, special-token
//! markers, non-ASCII) and huge, and every shape of host answer — absent,
//! failing, empty, too many, colliding ids, no provenance, foreign scopes,
//! wrong token counts; a policy that allows, redacts (shorter, longer,
//! empty), denies, fails or answers too few or too many verdicts; a
//! summariser that works, fails, answers nothing, one token, far over its
//! target, too few or too many.
//!
//! One generator serves the property tests (from a seed) and the fuzz
//! target (from the fuzzer's bytes), so both reach the same space.

use ctxpack_core::{
    AgentContext, AssembleRequest, BuilderConfig, Candidate, Compaction, ConversationStart,
    ConversationTurn, FullSettings, Layout, PackForm, Plan, Profile, Provenance, RagMemorySettings,
    RagSettings, Role, Section, SectionShare, StageSummary, Tokenizer, TrustTier, WorkflowStatus,
};
use ctxpack_scenario::Scenario;
use ctxpack_scenario::stores::{Answer, CounterRule, HostAnswers, PolicyRules, SummarizerRule};

mod attack;
mod chat;
pub use attack::{CANARY, fence_scenario, marker_spelling};
mod edges;
pub use edges::edge_scenario;
mod wild;

/// Where the generator's choices come from: a seeded sequence, or a
/// fuzzer's bytes (zeros once they run out, which picks the first, and
/// smallest, of every choice).
pub struct Source<'a> {
    bytes: &'a [u8],
    state: Option<u64>,
}

impl<'a> Source<'a> {
    /// Choices from the fuzzer's bytes.
    pub fn bytes(bytes: &'a [u8]) -> Self {
        Source { bytes, state: None }
    }

    /// Choices from a seed (xorshift).
    pub fn seeded(seed: u64) -> Source<'static> {
        Source {
            bytes: &[],
            state: Some(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
        }
    }

    /// The next 32 bits of choice.
    pub fn bits(&mut self) -> u32 {
        match &mut self.state {
            Some(s) => {
                *s ^= *s << 13;
                *s ^= *s >> 7;
                *s ^= *s << 17;
                (*s >> 32) as u32
            }
            None => {
                let (head, rest) = self.bytes.split_at(self.bytes.len().min(4));
                self.bytes = rest;
                let mut word = [0u8; 4];
                word[..head.len()].copy_from_slice(head);
                u32::from_le_bytes(word)
            }
        }
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u32) -> u32 {
        if n == 0 { 0 } else { self.bits() % n }
    }

    /// True about once in `n` times.
    pub fn one_in(&mut self, n: u32) -> bool {
        self.below(n) == 0
    }

    /// One of `items`.
    pub fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u32) as usize].clone()
    }
}

/// Words and pieces that stress the encodings' patterns and the renderer.
const PIECES: &[&str] = &[
    "the",
    "invoice",
    "deploy",
    "garden",
    "Kyoto",
    "refund",
    " ",
    "  ",
    "\n",
    "\n\n",
    "\t",
    "\r\n",
    "!",
    "!!!",
    "?",
    ".",
    ",",
    ":",
    "'s",
    "'LL",
    "don't",
    "42",
    "1234567",
    "café",
    "naïve",
    "東京",
    "日本語",
    "🙂",
    "—",
    "]",
    "[source: x]",
    "<untrusted>",
    "</untrusted>",
    "<untrusted source=\"y\">",
    "<|endoftext|>",
    "<|im_start|>",
    "\"",
    "//",
    "x²",
    "\u{a0}",
];

/// A text of up to `max` pieces, joined by a space or nothing; now and
/// then empty, a single piece, or huge.
fn text(src: &mut Source, max: u32) -> String {
    match src.below(40) {
        0 => String::new(),
        1 => src.pick(PIECES).to_owned(),
        2 => {
            let word = src.pick(PIECES);
            word.repeat(500 + src.below(3000) as usize)
        }
        _ => {
            let n = 1 + src.below(max.max(1));
            let mut out = String::new();
            for _ in 0..n {
                if !out.is_empty() && src.below(3) > 0 {
                    out.push(' ');
                }
                out.push_str(src.pick(PIECES));
            }
            out
        }
    }
}

const TOKENIZERS: &[Tokenizer] = &[
    Tokenizer::O200kBase,
    Tokenizer::Cl100kBase,
    Tokenizer::CharsPerToken(1),
    Tokenizer::CharsPerToken(2),
    Tokenizer::CharsPerToken(4),
];

const SECTIONS: &[Section] = &[
    Section::SystemPrompt,
    Section::WorkflowStatus,
    Section::MandatoryInstructions,
    Section::CurrentTask,
    Section::ConversationState,
    Section::CurrentDiff,
    Section::ToolResults,
    Section::RepositoryState,
    Section::RelevantKnowledge,
    Section::GraphNeighbours,
    Section::EpisodicMemory,
    Section::SupportingContext,
    Section::StageSummaries,
];

const TIERS: &[TrustTier] = &[
    TrustTier::System,
    TrustTier::Trusted,
    TrustTier::Unverified,
    TrustTier::Untrusted,
];

/// A budget: mostly a share of what the candidates hold (about four bytes
/// a token), so that most packs have to choose; now and then none (the
/// plan's default), tiny, or the largest there is.
fn budget(src: &mut Source, material: usize) -> Option<u32> {
    let material = u32::try_from(material / 4).unwrap_or(u32::MAX);
    match src.below(16) {
        0 => None,
        1 => Some(src.below(40)),
        2 => Some(u32::MAX - src.below(2)),
        3 => Some(src.below(4_000)),
        _ => Some(
            (u64::from(material) * u64::from(10 + src.below(110)) / 100)
                .try_into()
                .unwrap_or(u32::MAX)
                .max(20),
        ),
    }
}

/// Bytes of text the request and the host answers the profile asks for
/// hold.
fn material(request: &AssembleRequest, host: &HostAnswers, profile: Profile) -> usize {
    let asked: Vec<&Option<Answer>> = match profile {
        Profile::Passthrough => vec![],
        Profile::Rag(_) => vec![&host.retrieve],
        Profile::RagMemory(_) => vec![&host.retrieve, &host.recall_memory],
        Profile::Full(_) => vec![
            &host.retrieve,
            &host.expand_graph,
            &host.recall_memory,
            &host.repository_state,
        ],
    };
    let answers: usize = asked
        .iter()
        .map(|a| match a {
            Some(Answer::Items(v) | Answer::AllItems(v)) => v.iter().map(|c| c.text.len()).sum(),
            _ => 0,
        })
        .sum();
    answers
        + request.system_prompt.len()
        + request.instructions.iter().map(String::len).sum::<usize>()
        + request.current_task.as_ref().map_or(0, String::len)
        + request
            .conversation
            .iter()
            .map(|t| t.content.len() + 8)
            .sum::<usize>()
        + request
            .stage_summaries
            .iter()
            .map(|s| s.summary.len() + 12)
            .sum::<usize>()
}

fn overhead(src: &mut Source) -> u32 {
    match src.below(40) {
        0 => u32::MAX,
        1 => 1_000 + src.below(100_000),
        2..=19 => 0,
        _ => src.below(8),
    }
}

/// Built-in models counted with this build's encodings: name, tokenizer,
/// window.
const MODELS: &[(&str, Tokenizer, u32)] = &[
    ("gpt-4o", Tokenizer::O200kBase, 128_000),
    ("openai/gpt-oss-20b", Tokenizer::O200kBase, 131_072),
    ("GPT-5-2025-08-07", Tokenizer::O200kBase, 400_000),
    ("gpt-4", Tokenizer::Cl100kBase, 8_192),
    ("gpt-3.5-turbo-0125", Tokenizer::Cl100kBase, 16_385),
];

/// Names a model for `request`, one its budget fits in, leaving out
/// some of what the model's profile then gives: the tokenizer, the
/// entry overhead, the budget.
fn name_a_model(src: &mut Source, request: &mut AssembleRequest, plan: &Plan) {
    let fits = |&&(_, _, window): &&(&str, Tokenizer, u32)| {
        let window = plan.model_window.unwrap_or(window);
        let limit = (f64::from(window) * (1.0 - plan.safety_margin)).floor() as u32;
        request.budget.unwrap_or(plan.default_budget) <= limit
    };
    let fitting: Vec<_> = MODELS.iter().filter(fits).collect();
    if fitting.is_empty() {
        return;
    }
    let &(name, ref tokenizer, _) = fitting[src.below(fitting.len() as u32) as usize];
    request.model = Some(name.to_owned());
    if src.one_in(2) {
        request.tokenizer = None;
    } else if src.one_in(2) {
        // A tokenizer of the request's own, whatever the model's.
        request.tokenizer = Some(tokenizer.clone());
    }
    if src.one_in(2) {
        request.entry_overhead = None;
    }
    if src.one_in(4) {
        request.budget = None;
    }
}

/// Counts `request` with the host's counter (the scenario host's, a
/// word a token), which now and then fails or answers too few counts.
fn count_by_the_host(src: &mut Source, request: &mut AssembleRequest, host: &mut HostAnswers) {
    request.tokenizer = Some(Tokenizer::Host(
        src.pick(&["words", "claude-sonnet-4-5"]).to_owned(),
    ));
    host.counter = match src.below(12) {
        0 => None,
        1 => Some(CounterRule::Error("quota exceeded".to_owned())),
        2 => Some(CounterRule::TooFew),
        _ => Some(CounterRule::Words),
    };
}

/// A conversation with well-formed and orphaned tool calls.
fn conversation(src: &mut Source) -> Vec<ConversationTurn> {
    let n = match src.below(12) {
        0 => 0,
        1 => 40 + src.below(200),
        _ => src.below(16),
    };
    let mut turns = Vec::new();
    let mut open: Vec<String> = Vec::new();
    for k in 0..n {
        let (role, id) = match src.below(7) {
            0 | 1 => (Role::User, None),
            2 => (Role::Assistant, None),
            3 => {
                let id = format!("call{k}");
                open.push(id.clone());
                (Role::Assistant, Some(id))
            }
            4 => match open.pop() {
                Some(id) => (Role::Tool, Some(id)),
                None => (Role::Tool, Some(format!("orphan{k}"))),
            },
            5 => match open.last() {
                // A second result for a call still open.
                Some(id) => (Role::Tool, Some(id.clone())),
                None => (Role::User, None),
            },
            _ => (Role::System, None),
        };
        // An image now and then, of any cost a provider bills.
        let attached_tokens = match src.below(8) {
            0 => Some(src.below(2_000)),
            1 => Some(0),
            _ => None,
        };
        turns.push(ConversationTurn {
            role,
            content: text(src, 12),
            tool_call_id: id,
            attached_tokens,
        });
    }
    turns
}

fn candidate(src: &mut Source, ids: u32) -> Candidate {
    let id = src.below(ids);
    let reference = match src.below(8) {
        0 => "a \"quoted\" reference with spaces and ] brackets".repeat(1 + src.below(4) as usize),
        1 => String::new(),
        _ => format!("ref/{id}"),
    };
    Candidate {
        id: format!("c{id}"),
        section: if src.below(3) == 0 {
            src.pick(SECTIONS)
        } else {
            src.pick(&[
                Section::RelevantKnowledge,
                Section::GraphNeighbours,
                Section::EpisodicMemory,
                Section::RepositoryState,
            ])
        },
        text: text(src, 40),
        provenance: (!src.one_in(8)).then(|| Provenance {
            source_kind: src.pick(&["chunk", "doc", "memory", "request"]).to_owned(),
            reference,
            source_version: src.one_in(3).then(|| "v1".to_owned()),
            index_revision: src.one_in(2).then(|| format!("rev{}", src.below(3))),
        }),
        trust: src.pick(TIERS),
        score: match src.below(8) {
            0 => None,
            1 => Some(f64::NAN),
            2 => Some(-1.0),
            _ => Some(f64::from(src.below(1000)) / 1000.0),
        },
        sequence: src.one_in(2).then(|| u64::from(src.below(100))),
        scope: match src.below(6) {
            0 => Some("a".to_owned()),
            1 => Some("z".to_owned()),
            _ => None,
        },
        // A host's own count: usually absent, sometimes wrong.
        token_count: src.one_in(6).then(|| src.below(50)),
    }
}

fn answer(src: &mut Source, ids: u32) -> Option<Answer> {
    let items = |src: &mut Source| {
        let n = match src.below(10) {
            0 => 0,
            1 => 30 + src.below(60),
            _ => src.below(10),
        };
        (0..n).map(|_| candidate(src, ids)).collect::<Vec<_>>()
    };
    match src.below(10) {
        0 => None,
        1 => Some(Answer::Error("source down".to_owned())),
        2 => Some(Answer::AllItems(items(src))),
        _ => Some(Answer::Items(items(src))),
    }
}

fn policy(src: &mut Source, ids: u32) -> Option<PolicyRules> {
    if src.one_in(50) {
        return None;
    }
    let mut rules = PolicyRules::default();
    match src.below(50) {
        0 => rules.error = Some("policy engine down".to_owned()),
        1 => rules.verdicts = Some(src.below(3)),
        2 => rules.verdicts = Some(200),
        _ => {}
    }
    for _ in 0..src.below(4) {
        rules
            .deny
            .insert(format!("c{}", src.below(ids)), "embargoed".to_owned());
    }
    for _ in 0..src.below(4) {
        rules
            .redact
            .insert(format!("c{}", src.below(ids)), text(src, 20));
    }
    Some(rules)
}

/// A compaction a previous turn could have left for `request`'s
/// conversation: a summary of its first turns, where they end outside a
/// tool call's run of turns, and some of its tool results cleared.
fn compaction(src: &mut Source, request: &AssembleRequest) -> Compaction {
    let n = request.conversation.len() as u32;
    let turns = &request.conversation;
    let hash =
        |c: &Compaction| ctxpack_core::compaction_hash(&turns[..c.turns.max(c.cleared) as usize]);
    let mut c = Compaction {
        summary: text(src, 10),
        turns: src.below(n + 1),
        cleared: src.below(n + 1),
        hash: String::new(),
    };
    c.hash = hash(&c);
    let mut check = request.clone();
    check.compaction = Some(c.clone());
    if ctxpack_core::validate_request(&check).is_err() {
        c.turns = 0;
        c.hash = hash(&c);
    }
    // Now and then one from another conversation: refused.
    if src.one_in(10) {
        c.hash = ctxpack_core::compaction_hash(&[]).replace('0', "1");
    }
    c
}

fn summarizer(src: &mut Source) -> Option<SummarizerRule> {
    match src.below(12) {
        0 => None,
        1 => Some(SummarizerRule::Error("summariser down".to_owned())),
        2 => Some(SummarizerRule::TooFew),
        3 => Some(SummarizerRule::TooMany),
        4 => Some(SummarizerRule::Text(String::new())),
        5 => Some(SummarizerRule::Text("ok".to_owned())),
        6 => Some(SummarizerRule::Text("far over its target ".repeat(400))),
        7 => Some(SummarizerRule::Text(text(src, 30))),
        _ => Some(SummarizerRule::LeadingWords),
    }
}

fn profile(src: &mut Source) -> Profile {
    let limit = |src: &mut Source| match src.below(8) {
        0 => 0,
        1 => u32::MAX,
        _ => src.below(20),
    };
    match src.below(8) {
        0 => Profile::Passthrough,
        1 => Profile::Rag(RagSettings {
            retrieve_limit: limit(src),
        }),
        2 | 3 => Profile::RagMemory(RagMemorySettings {
            retrieve_limit: limit(src),
            memory_limit: limit(src),
        }),
        _ => Profile::Full(FullSettings {
            retrieve_limit: limit(src),
            graph_depth: src.pick(&[0, 1, 3, u32::MAX]),
            memory_limit: limit(src),
            repository_state: src.one_in(2),
        }),
    }
}

fn plan(src: &mut Source) -> Plan {
    let steps = if src.one_in(2) { 1 } else { 8 };
    let mut plan = Plan {
        compress: !src.one_in(4),
        min_summary_tokens: match src.below(4) {
            0 => 0,
            1 => 1,
            2 => src.below(10),
            _ => src.below(80),
        },
        cut_step: 1 + src.below(steps),
        ..Plan::default()
    };
    if src.one_in(3) {
        // A plan of its own: a few optional sections with shares that sum
        // to at most 1.
        let mut left = 1.0f64;
        plan.shares = Vec::new();
        for section in [
            Section::ConversationState,
            Section::RelevantKnowledge,
            Section::EpisodicMemory,
            Section::GraphNeighbours,
            Section::ToolResults,
            Section::SupportingContext,
            Section::StageSummaries,
        ] {
            if src.one_in(2) {
                let share = (f64::from(src.below(50)) / 100.0).min(left);
                left -= share;
                plan.shares.push(SectionShare { section, share });
            }
        }
    }
    plan
}

/// A scenario drawn from `src`.
pub fn scenario(src: &mut Source) -> Scenario {
    let mut s = base_scenario(src);
    // Now and then the conversation is given as a chat, in a provider's
    // shape (drawn last, so the cases drawn before stay as they were).
    if src.one_in(4) {
        s.request.chat = Some(chat::chat(src, &s.request.conversation));
        s.request.conversation = Vec::new();
        // Mostly for a model whose provider prices images (without one, an
        // image is refused: nothing says what it costs).
        if s.request.model.is_none() && !src.one_in(4) {
            s.request.model = Some(
                src.pick(&[
                    "gpt-4o",
                    "gpt-4.1-mini",
                    "o4-mini",
                    "claude-sonnet-4-5",
                    "gemini-2.5-flash",
                ])
                .to_owned(),
            );
        }
    }
    // Now and then strings nobody wrote in its string fields (drawn last
    // too).
    if src.one_in(8) {
        wild::strings(src, &mut s);
    }
    s
}

/// A [`scenario`] with strings nobody wrote in some of its string fields,
/// always (see `wild`).
pub fn wild_scenario(src: &mut Source) -> Scenario {
    let mut s = scenario(src);
    wild::strings(src, &mut s);
    s
}

/// A scenario whose conversation is the request's turns.
fn base_scenario(src: &mut Source) -> Scenario {
    // Ids from a small pool collide with each other now and then; the
    // request's own ids (turn-0, system-prompt) are in it too.
    let ids = 4 + src.below(40);
    let mut host = HostAnswers {
        retrieve: answer(src, ids),
        expand_graph: answer(src, ids),
        recall_memory: answer(src, ids),
        repository_state: answer(src, ids),
        policy: policy(src, ids),
        summarizer: summarizer(src),
        counter: None,
    };
    if src.one_in(10)
        && let Some(Answer::Items(items)) = &mut host.retrieve
        && let Some(first) = items.first_mut()
    {
        first.id = src
            .pick(&["turn-0", "system-prompt", "stage-summary-0"])
            .to_owned();
    }
    let mut request = AssembleRequest {
        context: AgentContext {
            session_id: (!src.one_in(4)).then(|| "sess".to_owned()),
            trace_id: "t".to_owned(),
            user_id: (!src.one_in(4)).then(|| "u".to_owned()),
            tenant_id: src.one_in(2).then(|| "tenant".to_owned()),
            project_id: None,
            run_id: src.one_in(2).then(|| "run".to_owned()),
            attempt_id: src.one_in(2).then(|| "attempt".to_owned()),
            scopes: if src.one_in(3) {
                Vec::new()
            } else {
                vec!["a".to_owned(), "b".to_owned()]
            },
        },
        query: text(src, 6),
        model: None,
        tokenizer: Some(src.pick(TOKENIZERS)),
        budget: None,
        entry_overhead: Some(overhead(src)),
        reply_overhead: None,
        system_prompt: if src.one_in(5) {
            String::new()
        } else {
            text(src, 20)
        },
        workflow: src.one_in(2).then(|| WorkflowStatus {
            status: src.pick(&["running", "blocked", "done"]).to_owned(),
            stage_id: src.one_in(2).then(|| "plan".to_owned()),
        }),
        instructions: (0..src.below(3)).map(|_| text(src, 10)).collect(),
        current_task: src.one_in(2).then(|| text(src, 12)),
        conversation: conversation(src),
        chat: None,
        keep_last: match src.below(6) {
            0 => 0,
            1 => u32::MAX,
            _ => src.below(25),
        },
        conversation_start: match src.below(3) {
            0 => None,
            1 => Some(ConversationStart::UserTurn),
            _ => Some(ConversationStart::AnyTurn),
        },
        form: match src.below(3) {
            0 => None,
            1 => Some(PackForm::Text),
            _ => Some(PackForm::Messages),
        },
        layout: None,
        stage_summaries: (0..src.below(5))
            .map(|i| StageSummary {
                stage_id: format!("s{i}"),
                outcome: src.pick(&["ok", "failed"]).to_owned(),
                summary: text(src, 15),
            })
            .collect(),
        compaction: None,
    };
    if request.form == Some(PackForm::Text) {
        // The flat text has no messages to charge an overhead for.
        request.entry_overhead = None;
    }
    let profile = profile(src);
    request.budget = budget(src, material(&request, &host, profile));
    let mut config = BuilderConfig {
        profile,
        near_duplicate_threshold: src.pick(&[0.8, 0.5, 1.0]),
        plan: plan(src),
        ..BuilderConfig::default()
    };
    if src.one_in(6) {
        name_a_model(src, &mut request, &config.plan);
    }
    if src.one_in(8) {
        count_by_the_host(src, &mut request, &mut host);
    }
    // Drawn after the rest, so the cases drawn before it stay as they were.
    request.layout = match src.below(3) {
        0 => None,
        1 => Some(Layout::ContextFirst),
        _ => Some(Layout::CacheFirst),
    };
    // The steps a cache-first conversation gives way in: none, the
    // default quarter, a sliver (steps of a turn or two), or the whole
    // budget (larger than the conversation's room).
    config.plan.cut_share = match src.below(4) {
        0 => 0.0,
        1 => Plan::default().cut_share,
        2 => f64::from(1 + src.below(20)) / 1000.0,
        _ => 1.0,
    };
    // Compaction, drawn after the rest: none, or at a share of the
    // budget, its summary of no room, a sliver or the default, clearing
    // none, any or some; and the state a previous turn left.
    if !src.one_in(2) {
        config.plan.compact_share = f64::from(src.below(60)) / 100.0;
        config.plan.compact_tokens = src.pick(&[0, 8, Plan::default().compact_tokens]);
        config.plan.clear_at_least = src.pick(&[0, 1, 30]);
    }
    if src.one_in(3) {
        request.compaction = Some(compaction(src, &request));
    }
    Scenario {
        description: "generated".to_owned(),
        config,
        request,
        host,
        router: None,
        expect: None,
    }
}
