//! ctxpack's assembly on generated workloads, natively and through the
//! component under wasmtime. `bench/compare` runs these and the Python
//! peer on the same data and prints the ratios.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use ctxpack_bench::{Workload, chat, chunks, conversation, pack, pipeline, trim};
use ctxpack_core::{Builder, ConversationTurn, Role, Tokenizer};
use ctxpack_host::component::{Instance, Runtime};
use ctxpack_scenario::stores::InMemoryHost;
use std::hint::black_box;
use std::sync::OnceLock;

fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| Runtime::load_bundled().expect("the bundled component loads"))
}

/// A workload whose builder keeps no counts between assemblies, so every
/// iteration does the whole work.
fn cold(mut w: Workload) -> Workload {
    w.config.count_cache_entries = 0;
    w.config.preload = vec![Tokenizer::O200kBase];
    w
}

/// Whether the command line's filter (criterion's, given after `--`) may
/// select a benchmark of `group`. A workload that will not run is not set
/// up: setting one up, and the check assembly that follows, leave the
/// allocator in another state, which showed in the times of the workloads
/// after it (a 10k-message trim took 2-3x as long after the packs had run
/// in the same process). `bench/compare` runs each group in a process of
/// its own.
fn selected(group: &str) -> bool {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    filters.is_empty()
        || filters
            .iter()
            .any(|f| group.contains(f.split('/').next().unwrap_or(f)))
}

/// A workload's builder with its host, and a component instance of it
/// (under the same configuration, with the same host answers), each
/// checked once to assemble at all.
struct Engines {
    builder: Builder,
    host: InMemoryHost,
    instance: Instance,
}

fn engines(w: &Workload) -> Engines {
    let builder = Builder::new(w.config.clone()).unwrap();
    let mut host = InMemoryHost::new(w.host.clone());
    builder.assemble(&w.request, &mut host).unwrap();
    let mut instance = runtime()
        .instantiate(InMemoryHost::new(w.host.clone()), &w.config)
        .unwrap()
        .unwrap();
    instance.assemble(&w.request).unwrap().unwrap();
    Engines {
        builder,
        host,
        instance,
    }
}

/// Times one assembly of the workload `make` builds, natively and through
/// the component. The retrieved candidates are handed to the host before
/// each assembly (not timed), so the host does not copy its store inside
/// the measurement; the pack is dropped inside it.
fn both(c: &mut Criterion, name: &str, make: impl FnOnce() -> Workload) {
    if !selected(name) {
        return;
    }
    let w = &make();
    let mut group = c.benchmark_group(name);
    group.sample_size(10);
    let Engines {
        builder,
        mut host,
        mut instance,
    } = engines(w);
    group.bench_function("native", |b| {
        b.iter_batched(
            || w.retrieved(),
            |items| {
                Workload::hand_over(items, &mut host);
                black_box(&builder.assemble(&w.request, &mut host).unwrap());
            },
            BatchSize::LargeInput,
        )
    });
    group.bench_function("wasmtime", |b| {
        b.iter_batched(
            || w.retrieved(),
            |items| {
                Workload::hand_over(items, instance.host_mut::<InMemoryHost>().unwrap());
                black_box(&instance.assemble(&w.request).unwrap().unwrap());
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

fn pack_10k(c: &mut Criterion) {
    both(c, "pack-10k-into-128k", || {
        cold(pack(&chunks(10_000, 260, 1), 128_000))
    });
}

fn pack_5k(c: &mut Criterion) {
    both(c, "pack-5k-into-32k", || {
        cold(pack(&chunks(5_000, 1_200, 2), 32_000))
    });
}

fn trim_10k(c: &mut Criterion) {
    both(c, "trim-10k-to-8k", || {
        cold(trim(&conversation(10_000, 3), 8_000))
    });
}

fn pipeline_seed_004(c: &mut Criterion) {
    both(c, "seed-004-pipeline", || cold(pipeline(4)));
}

/// A conversation assembled again with one new turn: cold (the builder
/// keeps no counts) against warm (it counted the earlier turns last time).
/// On the 10k-message trim, where few turns are counted, and on a 200-turn
/// chat of long answers, most of which fit in 32k.
fn reassemble(c: &mut Criterion) {
    if selected("reassemble-trim-10k") {
        reassemble_one(
            c,
            "reassemble-trim-10k",
            trim(&conversation(10_000, 3), 8_000),
        );
    }
    if selected("reassemble-chat-200") {
        reassemble_one(c, "reassemble-chat-200", trim(&chat(200, 5), 32_000));
    }
}

fn reassemble_one(c: &mut Criterion, name: &str, base: Workload) {
    let mut turn = 0u64;
    let mut with_new_turn = move |w: &Workload| {
        turn += 1;
        let mut request = w.request.clone();
        request.conversation.push(ConversationTurn {
            role: if turn.is_multiple_of(2) {
                Role::User
            } else {
                Role::Assistant
            },
            content: format!("A new turn, number {turn}, asking about the deploy."),
            tool_call_id: None,
            attached_tokens: None,
        });
        request.keep_last += 1;
        request
    };
    let mut group = c.benchmark_group(name);
    group.sample_size(20);
    for (label, w) in [("cold", cold(base.clone())), ("warm", base.clone())] {
        let Engines {
            builder,
            mut host,
            mut instance,
        } = engines(&w);
        group.bench_function(format!("native-{label}"), |b| {
            b.iter_batched(
                || with_new_turn(&w),
                |r| black_box(builder.assemble(&r, &mut host).unwrap()),
                BatchSize::LargeInput,
            )
        });
        group.bench_function(format!("wasmtime-{label}"), |b| {
            b.iter_batched(
                || with_new_turn(&w),
                |r| black_box(instance.assemble(&r).unwrap().unwrap()),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    pack_10k,
    pack_5k,
    trim_10k,
    reassemble,
    pipeline_seed_004
);
criterion_main!(benches);
