//! Exact counting (o200k), natively and through the component, beside
//! GitHub's `bpe-openai` (and tiktoken-rs, where it finishes) in the same
//! run, on the same texts: prose and code, where the piece memory leads;
//! one huge random word, one character repeated, a long run of spaces,
//! where merging by rank was worse than linear; and text of six scripts,
//! a fresh text each time, so that every count is a first count.
//!
//! Through the component a count is an assembly whose only text is the
//! current task: what a host pays to have a text of its counted.
//!
//! ```sh
//! cargo bench -p ctxpack-bench --bench count
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ctxpack_bench::texts;
use ctxpack_core::{
    AgentContext, AssembleRequest, BuilderConfig, LoadedTokenizer, Profile, TokenCounter,
    Tokenizer, Tokenizers,
};
use ctxpack_host::component::{Instance, Runtime};
use ctxpack_scenario::stores::InMemoryHost;
use std::hint::black_box;
use std::sync::OnceLock;

fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| Runtime::load_bundled().expect("the bundled component loads"))
}

/// A request whose only text is `text`, as its current task.
fn request(text: &str) -> AssembleRequest {
    AssembleRequest {
        context: AgentContext {
            trace_id: "count".into(),
            ..AgentContext::default()
        },
        query: String::new(),
        model: None,
        tokenizer: Some(Tokenizer::O200kBase),
        budget: Some(u32::MAX / 2),
        entry_overhead: None,
        reply_overhead: None,
        system_prompt: String::new(),
        workflow: None,
        instructions: Vec::new(),
        current_task: Some(text.to_owned()),
        conversation: Vec::new(),
        chat: None,
        keep_last: 0,
        conversation_start: None,
        form: None,
        layout: None,
        stage_summaries: Vec::new(),
        compaction: None,
    }
}

/// A builder that keeps no counts between assemblies, so each assembly
/// counts its text afresh (with a cache, an input of one text would be
/// counted once and then only hashed). A model window large enough for
/// the largest text.
fn config() -> BuilderConfig {
    let mut config = BuilderConfig {
        profile: Profile::Passthrough,
        count_cache_entries: 0,
        ..BuilderConfig::default()
    };
    config.plan.model_window = Some(u32::MAX);
    config
}

fn instance() -> Instance {
    runtime()
        .instantiate(InMemoryHost::default(), &config())
        .unwrap()
        .unwrap()
}

/// The texts of one input: one, or several to count in turn (each count
/// then meets pieces it has not seen lately).
fn group(c: &mut Criterion, name: &str, texts: Vec<String>, tiktoken: bool) {
    let tokenizers = Tokenizers::new();
    let ours = tokenizers.counter(&Tokenizer::O200kBase).unwrap();
    let bpe = bpe_openai::o200k_base();
    // The same counts, or the comparison means nothing.
    for t in &texts {
        assert_eq!(ours.count(t) as usize, bpe.count(t.as_str()), "{name}");
    }
    let mut group = c.benchmark_group(format!("count/{name}"));
    group.sample_size(10);
    group.throughput(Throughput::Bytes(texts[0].len() as u64));
    let n = texts.len();
    let mut next = {
        let mut k = 0;
        move || {
            k = (k + 1) % n;
            k
        }
    };
    let all = texts;
    group.bench_function("ctxpack", |b| {
        b.iter(|| black_box(ours.count(&all[next()])))
    });
    group.bench_function("bpe-openai", |b| {
        b.iter(|| black_box(bpe.count(all[next()].as_str())))
    });
    if tiktoken {
        let tk = tiktoken_rs::o200k_base_singleton();
        group.bench_function("tiktoken-rs", |b| {
            b.iter(|| black_box(tk.encode_ordinary(&all[next()]).len()))
        });
    }
    let requests: Vec<AssembleRequest> = all.iter().map(|t| request(t)).collect();
    let builder = ctxpack_core::Builder::new(config()).unwrap();
    group.bench_function("ctxpack-assemble-native", |b| {
        b.iter(|| {
            let mut host = InMemoryHost::default();
            black_box(builder.assemble(&requests[next()], &mut host).unwrap())
        })
    });
    let mut instance = instance();
    group.bench_function("ctxpack-assemble-wasmtime", |b| {
        b.iter(|| black_box(instance.assemble(&requests[next()]).unwrap().unwrap()))
    });
    group.finish();
}

fn counting(c: &mut Criterion) {
    const MB: usize = 1 << 20;
    group(c, "prose-1mb", vec![texts::prose(MB, 1)], true);
    group(c, "code-1mb", vec![texts::code(MB)], true);
    group(
        c,
        "random-word-250kb",
        vec![texts::random_word(MB / 4, 2)],
        false,
    );
    group(c, "random-word-1mb", vec![texts::random_word(MB, 2)], false);
    group(c, "one-letter-1mb", vec!["a".repeat(MB)], false);
    group(c, "spaces-1mb", vec![" ".repeat(MB)], false);
    let mixed = (0..8).map(|k| texts::mixed(MB, 10 + k)).collect();
    group(c, "six-scripts-1mb-first-count", mixed, true);
}

/// o200k as a tiktoken rank file, written from tiktoken-rs's own copy.
fn o200k_rank_file() -> Vec<u8> {
    use base64::Engine;
    let bpe = tiktoken_rs::o200k_base_singleton();
    let mut file = String::new();
    for rank in 0..199_998u32 {
        let bytes = bpe.decode_bytes(&[rank]).unwrap();
        let token = base64::engine::general_purpose::STANDARD.encode(bytes);
        file.push_str(&format!("{token} {rank}\n"));
    }
    file.into_bytes()
}

/// A tokenizer file loaded at run time beside the built-in tables: o200k
/// as a rank file (the same tokens, so the same counts), and, when
/// `tests/tokenizers/fetch` has run (`CTXPACK_TOKENIZERS`), the files
/// users have; and the time to load each.
fn loaded(c: &mut Criterion) {
    const MB: usize = 1 << 20;
    let mut files = vec![(
        "o200k-rank-file".to_owned(),
        o200k_rank_file(),
        Some("o200k"),
    )];
    if let Some(dir) = std::env::var_os("CTXPACK_TOKENIZERS") {
        for name in ["llama3", "qwen3", "tekken", "deepseek-v3", "gemma3"] {
            let path = std::path::Path::new(&dir).join(format!("{name}.json"));
            let record: serde_json::Value =
                serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
            let file = std::fs::read(record["file"].as_str().unwrap()).unwrap();
            let pattern = record["pattern"]
                .as_str()
                .map(|p| -> &'static str { p.to_owned().leak() });
            files.push((name.to_owned(), file, pattern));
        }
    }
    let tokenizers = Tokenizers::new();
    let builtin = tokenizers.counter(&Tokenizer::O200kBase).unwrap();
    let inputs = [
        ("prose-1mb", texts::prose(MB, 1)),
        ("code-1mb", texts::code(MB)),
        ("random-word-1mb", texts::random_word(MB, 2)),
    ];
    // The texts, for the peer (`bench/tokenizer_files.py`) to count the same.
    if let Some(dir) = std::env::var_os("CTXPACK_BENCH_TEXTS") {
        for (input, text) in &inputs {
            std::fs::write(
                std::path::Path::new(&dir).join(format!("{input}.txt")),
                text,
            )
            .unwrap();
        }
    }
    for (name, file, pattern) in &files {
        let mut group = c.benchmark_group(format!("load/{name}"));
        group.sample_size(10);
        group.bench_function("ctxpack", |b| {
            b.iter(|| black_box(LoadedTokenizer::from_file(file, *pattern).unwrap()))
        });
        group.finish();
        let tokenizer = LoadedTokenizer::from_file(file, *pattern).unwrap();
        for (input, text) in &inputs {
            let mut group = c.benchmark_group(format!("count-loaded/{input}"));
            group.sample_size(10);
            group.throughput(Throughput::Bytes(text.len() as u64));
            group.bench_function(name.as_str(), |b| {
                b.iter(|| black_box(tokenizer.count(text)))
            });
            if name == "o200k-rank-file" {
                assert_eq!(tokenizer.count(text), builtin.count(text));
                group.bench_function("o200k-built-in", |b| {
                    b.iter(|| black_box(builtin.count(text)))
                });
            }
            group.finish();
        }
    }
}

criterion_group!(benches, counting, loaded);
criterion_main!(benches);
