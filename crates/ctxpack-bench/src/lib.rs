//! Generated, deterministic workloads for ctxpack's benchmarks, and the
//! files the Python peer (`bench/peer.py`) runs the same work on.
//!
//! Texts are sentences over a pseudo-word vocabulary drawn with Zipf
//! frequencies (a few words are very common, most are rare), so token
//! counts, shingle overlap and duplicate rates behave like prose. A share of
//! the chunks are exact copies or near copies (a few words edited) of
//! earlier ones, as a retriever over overlapping documents returns.

use ctxpack_core::{AssembleRequest, BuilderConfig, Candidate};
use ctxpack_scenario::stores::{Answer, HostAnswers, InMemoryHost};
use serde_json::{Value, json};

/// SplitMix64: small, fast, the same everywhere.
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A number in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Words drawn with Zipf frequencies.
pub struct Vocabulary {
    words: Vec<String>,
    cumulative: Vec<f64>,
}

impl Vocabulary {
    /// `n` pseudo-words of one to four syllables.
    pub fn new(n: usize, rng: &mut Rng) -> Self {
        const ONSETS: [&str; 16] = [
            "b", "c", "d", "f", "g", "l", "m", "n", "p", "r", "s", "t", "v", "st", "tr", "ch",
        ];
        const NUCLEI: [&str; 6] = ["a", "e", "i", "o", "u", "ou"];
        const CODAS: [&str; 6] = ["", "n", "r", "s", "t", "l"];
        let mut words = Vec::with_capacity(n);
        let mut seen = std::collections::HashSet::new();
        while words.len() < n {
            let syllables = 1 + rng.below(4);
            let word: String = (0..syllables)
                .map(|_| {
                    format!(
                        "{}{}{}",
                        ONSETS[rng.below(ONSETS.len())],
                        NUCLEI[rng.below(NUCLEI.len())],
                        CODAS[rng.below(CODAS.len())]
                    )
                })
                .collect();
            if seen.insert(word.clone()) {
                words.push(word);
            }
        }
        let mut total = 0.0;
        let cumulative = (0..n)
            .map(|rank| {
                total += 1.0 / (rank as f64 + 1.0);
                total
            })
            .collect();
        Vocabulary { words, cumulative }
    }

    /// One word.
    pub fn word(&self, rng: &mut Rng) -> &str {
        let total = self.cumulative.last().copied().unwrap_or(1.0);
        let x = rng.unit() * total;
        let i = self.cumulative.partition_point(|&c| c < x);
        &self.words[i.min(self.words.len() - 1)]
    }

    /// Sentences of about `bytes` bytes in all.
    pub fn prose(&self, rng: &mut Rng, bytes: usize) -> String {
        let mut out = String::with_capacity(bytes + 64);
        while out.len() < bytes {
            let words = 6 + rng.below(14);
            for w in 0..words {
                let word = self.word(rng);
                if w == 0 {
                    let mut chars = word.chars();
                    if let Some(first) = chars.next() {
                        out.extend(first.to_uppercase());
                        out.push_str(chars.as_str());
                    }
                } else {
                    out.push(' ');
                    out.push_str(word);
                }
            }
            out.push_str(if rng.below(8) == 0 { ", " } else { ". " });
        }
        out.truncate(out.trim_end().len());
        out
    }
}

/// One retrieved chunk.
#[derive(Clone, Debug)]
pub struct Chunk {
    /// Its id (also its citation).
    pub id: String,
    /// Its text.
    pub text: String,
    /// The retriever's score.
    pub score: f64,
}

/// `n` chunks of about `bytes` bytes: 3% exact copies and 3% near copies
/// (one word edited) of earlier chunks, each with its own id and score.
pub fn chunks(n: usize, bytes: usize, seed: u64) -> Vec<Chunk> {
    let mut rng = Rng::new(seed);
    let vocab = Vocabulary::new(6000, &mut rng);
    let mut out: Vec<Chunk> = Vec::with_capacity(n);
    for i in 0..n {
        let roll = rng.below(100);
        let text = if i > 0 && roll < 3 {
            out[rng.below(i)].text.clone()
        } else if i > 0 && roll < 6 {
            let source = &out[rng.below(i)].text;
            let mut words: Vec<String> = source.split(' ').map(str::to_owned).collect();
            for _ in 0..1 {
                let at = rng.below(words.len());
                words[at] = vocab.word(&mut rng).to_owned();
            }
            words.join(" ")
        } else {
            vocab.prose(&mut rng, bytes)
        };
        out.push(Chunk {
            id: format!("doc-{i:05}"),
            text,
            score: rng.unit(),
        });
    }
    out
}

/// A conversation of `n` alternating user and assistant turns of 5 to 60
/// words.
pub fn conversation(n: usize, seed: u64) -> Vec<(String, String)> {
    let mut rng = Rng::new(seed);
    let vocab = Vocabulary::new(6000, &mut rng);
    (0..n)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            let bytes = 30 + rng.below(330);
            (role.to_owned(), vocab.prose(&mut rng, bytes))
        })
        .collect()
}

/// A chat of `n` turns: short user questions and long assistant answers
/// (600 to 2,400 bytes, about 150 to 600 tokens).
pub fn chat(n: usize, seed: u64) -> Vec<(String, String)> {
    let mut rng = Rng::new(seed);
    let vocab = Vocabulary::new(6000, &mut rng);
    (0..n)
        .map(|i| {
            if i % 2 == 0 {
                let bytes = 40 + rng.below(200);
                ("user".to_owned(), vocab.prose(&mut rng, bytes))
            } else {
                let bytes = 600 + rng.below(1800);
                ("assistant".to_owned(), vocab.prose(&mut rng, bytes))
            }
        })
        .collect()
}

/// One assembly to run: the builder's configuration, the request and what
/// the host answers.
#[derive(Clone)]
pub struct Workload {
    /// The builder's configuration.
    pub config: BuilderConfig,
    /// The request.
    pub request: AssembleRequest,
    /// The host's stores.
    pub host: HostAnswers,
}

impl Workload {
    /// What the host retrieves, if it retrieves a list of candidates.
    pub fn retrieved(&self) -> Option<Vec<Candidate>> {
        match &self.host.retrieve {
            Some(Answer::Items(items) | Answer::AllItems(items)) => Some(items.clone()),
            _ => None,
        }
    }

    /// Hands the retrieved candidates to `host` for its next retrieval, as
    /// a host whose retriever builds a fresh answer for each call would:
    /// the builder then gets them without the in-memory host copying its
    /// store, and a measurement takes in the assembly alone.
    pub fn hand_over(items: Option<Vec<Candidate>>, host: &mut InMemoryHost) {
        if let Some(items) = items {
            host.hand_over_retrieval(items);
        }
    }
}

fn parse<T: serde::de::DeserializeOwned>(value: Value) -> T {
    match serde_json::from_value(value) {
        Ok(v) => v,
        // The workloads are built here from literals: a failure is a bug in
        // this file, found the first time it runs.
        Err(e) => panic!("a generated workload does not parse: {e}"),
    }
}

fn candidates(chunks: &[Chunk], section: &str) -> Value {
    Value::Array(
        chunks
            .iter()
            .map(|c| {
                json!({
                    "id": c.id, "section": section, "text": c.text, "trust": "trusted",
                    "score": c.score,
                    "provenance": {"source-kind": "chunk", "reference": c.id}
                })
            })
            .collect(),
    )
}

/// Packs `chunks` into `budget` tokens (o200k): retrieval only, ranked by
/// score, deduplicated, greedy — relevant knowledge has the whole budget and
/// nothing is summarised, so the outcome is a plain greedy fill the peer can
/// reproduce.
pub fn pack(chunks: &[Chunk], budget: u32) -> Workload {
    Workload {
        config: parse(json!({
            "profile": {"rag": {"retrieve-limit": chunks.len()}},
            "plan": {
                "default-budget": budget,
                "shares": [{"section": "relevant-knowledge", "share": 1.0}],
                "compress": false
            }
        })),
        request: bare_request("what do the documents say?", budget, Vec::new()),
        host: parse(json!({
            "retrieve": {"items": candidates(chunks, "relevant-knowledge")},
            "policy": {}
        })),
    }
}

/// Trims `turns` to the newest that fit in `budget` tokens (o200k): no
/// host, nothing but the conversation.
pub fn trim(turns: &[(String, String)], budget: u32) -> Workload {
    Workload {
        config: parse(json!({
            "profile": "passthrough",
            "plan": {"default-budget": budget, "compress": false}
        })),
        request: bare_request("and then?", budget, turns.to_vec()),
        host: HostAnswers::default(),
    }
}

/// A request with nothing but `query`, `budget` (o200k, no entry overhead,
/// no system prompt) and `turns`, all of them within keep-last.
fn bare_request(query: &str, budget: u32, turns: Vec<(String, String)>) -> AssembleRequest {
    let keep_last = turns.len();
    let conversation: Vec<Value> = turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    parse(json!({
        "context": {"session-id": "bench", "trace-id": "t"},
        "query": query,
        "tokenizer": "o200k-base",
        "budget": budget,
        "entry-overhead": 0,
        "system-prompt": "",
        "conversation": conversation,
        "keep-last": keep_last
    }))
}

/// The whole pipeline (the `full` profile): every source (retrieval with
/// duplicates and another tenant's items, graph, memory, repository
/// state), a policy that denies and redacts, a summariser for what does not
/// fit, the default shares of a 24,000-token budget, and a conversation.
pub fn pipeline(seed: u64) -> Workload {
    let retrieved = chunks(400, 1200, seed);
    let graph = chunks(150, 800, seed + 1);
    let memory = chunks(80, 400, seed + 2);
    let repo = chunks(30, 600, seed + 3);
    let turns = conversation(60, seed + 4);
    let mut retrieve = candidates(&retrieved, "relevant-knowledge");
    if let Value::Array(items) = &mut retrieve {
        for (i, item) in items.iter_mut().enumerate() {
            if i % 17 == 0 {
                item["scope"] = json!("tenant-b");
            }
            if i % 29 == 0 {
                item["trust"] = json!("untrusted");
            }
        }
    }
    let rename = |cs: Vec<Chunk>, prefix: &str| -> Vec<Chunk> {
        cs.into_iter()
            .map(|mut c| {
                c.id = format!("{prefix}-{}", c.id);
                c
            })
            .collect()
    };
    let deny: serde_json::Map<String, Value> = (0..400)
        .step_by(23)
        .map(|i| (format!("doc-{i:05}"), json!("restricted")))
        .collect();
    let redact: serde_json::Map<String, Value> = (5..400)
        .step_by(31)
        .map(|i| (format!("doc-{i:05}"), json!("[redacted]")))
        .collect();
    let conversation: Vec<Value> = turns
        .iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    Workload {
        config: parse(json!({
            "profile": {"full": {"retrieve-limit": 400, "memory-limit": 80, "graph-depth": 2, "repository-state": true}}
        })),
        request: parse(json!({
            "context": {
                "session-id": "bench", "trace-id": "t", "tenant-id": "tenant-a",
                "user-id": "u1", "scopes": ["tenant-a"]
            },
            "query": "why did the deploy fail?",
            "tokenizer": "o200k-base",
            "budget": 24000,
            "entry-overhead": 4,
            "system-prompt": "You are a careful assistant. Cite sources.",
            "instructions": ["Never reveal credentials."],
            "current-task": "Find the cause of the failed deploy.",
            "conversation": conversation,
            "keep-last": 40
        })),
        host: parse(json!({
            "retrieve": {"items": retrieve},
            "expand-graph": {"items": candidates(&rename(graph, "graph"), "graph-neighbours")},
            "recall-memory": {"items": candidates(&rename(memory, "mem"), "episodic-memory")},
            "repository-state": {"items": candidates(&rename(repo, "repo"), "repository-state")},
            "policy": {"deny": deny, "redact": redact},
            "summarizer": "leading-words"
        })),
    }
}

/// The pack benchmark as a file for the peer: the chunks, the budget, how a
/// chunk is cited, and what ctxpack selected, in order.
pub fn pack_file(chunks: &[Chunk], budget: u32, selected: &[String]) -> Value {
    json!({
        "budget": budget,
        "header": "[source: {id}]\n",
        "chunks": chunks.iter().map(|c| json!({"id": c.id, "text": c.text, "score": c.score})).collect::<Vec<_>>(),
        "selected": selected,
    })
}

/// The trim benchmark as a file for the peer: the turns, the budget, how a
/// turn is rendered, and how many ctxpack kept.
pub fn trim_file(turns: &[(String, String)], budget: u32, kept: usize) -> Value {
    json!({
        "budget": budget,
        "render": "[{role}] {content}",
        "turns": turns.iter().map(|(r, c)| json!({"role": r, "content": c})).collect::<Vec<_>>(),
        "kept": kept,
    })
}

/// Texts for the counting benchmarks (`benches/count.rs`): what counting
/// meets in practice, and the inputs that used to make it slow — one huge
/// word, one repeated character, a long run of spaces, many scripts.
pub mod texts {
    use super::{Rng, Vocabulary};

    /// Prose of about `bytes` bytes (the workloads' Zipf vocabulary).
    pub fn prose(bytes: usize, seed: u64) -> String {
        let mut rng = Rng::new(seed);
        let vocabulary = Vocabulary::new(5_000, &mut rng);
        vocabulary.prose(&mut rng, bytes)
    }

    /// Code of about `bytes` bytes: the core's own sources, repeated.
    pub fn code(bytes: usize) -> String {
        let sources = [
            include_str!("../../ctxpack-core/src/budget.rs"),
            include_str!("../../ctxpack-core/src/render.rs"),
            include_str!("../../ctxpack-core/src/encoding.rs"),
        ]
        .concat();
        let mut out = sources.repeat(bytes / sources.len() + 1);
        let mut end = bytes;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
        out
    }

    /// One word of `bytes` random lowercase letters: a single piece, which
    /// merging by rank took in time worse than linear.
    pub fn random_word(bytes: usize, seed: u64) -> String {
        let mut rng = Rng::new(seed);
        (0..bytes)
            .map(|_| char::from(b'a' + rng.below(26) as u8))
            .collect()
    }

    /// Words of two to nine letters of six scripts (Latin, Cyrillic, CJK,
    /// Greek, Arabic, Devanagari), picked at random, about `bytes` bytes:
    /// few pieces repeat, so every count of one is a first count.
    pub fn mixed(bytes: usize, seed: u64) -> String {
        const SCRIPTS: [&str; 6] = [
            "abcdefghiklmnoprstu",
            "абвгдежзиклмнопрст",
            "東京日本語中文天気晴れのテキスト",
            "αβγδεζηθικλμνξοπ",
            "البعريةمنس",
            "हिन्दीकमरस",
        ];
        let scripts: Vec<Vec<char>> = SCRIPTS.iter().map(|s| s.chars().collect()).collect();
        let mut rng = Rng::new(seed);
        let mut out = String::with_capacity(bytes + 64);
        while out.len() < bytes {
            let script = &scripts[rng.below(scripts.len())];
            for _ in 0..2 + rng.below(8) {
                out.push(script[rng.below(script.len())]);
            }
            out.push(if rng.below(10) == 0 { '\n' } else { ' ' });
        }
        out
    }
}
