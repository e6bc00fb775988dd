//! The router on the host example's routes and its labelled queries: a
//! router compiled from the YAML once, then every query routed, natively
//! and through the component under wasmtime (where the regex crate is
//! built without its lazy DFA, one-pass and backtracking engines; natively
//! the peers' dependencies bring them back). Routing runs once per
//! request, before any assembly; the figures are in `bench/README.md`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use ctxpack_core::{BuilderConfig, ConfigFormat, NoHost, Router};
use ctxpack_host::component::Runtime;
use std::hint::black_box;
use std::path::Path;

fn routes() -> (String, Vec<String>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../host-example/routes");
    let yaml = std::fs::read_to_string(dir.join("assistant.yaml")).unwrap();
    let tsv = std::fs::read_to_string(dir.join("assistant-queries.tsv")).unwrap();
    let queries = tsv
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.splitn(3, '\t').nth(2).map(str::to_owned))
        .collect();
    (yaml, queries)
}

fn route(c: &mut Criterion) {
    let (yaml, queries) = routes();
    let mut group = c.benchmark_group("route");
    group.bench_function("compile", |b| {
        b.iter(|| Router::from_text(black_box(&yaml), ConfigFormat::Yaml).unwrap())
    });
    let router = Router::from_text(&yaml, ConfigFormat::Yaml).unwrap();
    group.bench_function(format!("all-{}-queries", queries.len()), |b| {
        b.iter(|| {
            for q in &queries {
                black_box(router.route(black_box(q)));
            }
        })
    });
    let runtime = Runtime::load_bundled().expect("the bundled component loads");
    let mut instance = runtime
        .instantiate(NoHost, &BuilderConfig::default())
        .unwrap()
        .unwrap();
    let router = instance.router(&yaml, ConfigFormat::Yaml).unwrap().unwrap();
    group.bench_function(format!("component/all-{}-queries", queries.len()), |b| {
        b.iter(|| {
            for q in &queries {
                black_box(instance.route(router, black_box(q)).unwrap());
            }
        })
    });
    group.finish();
}

criterion_group!(benches, route);
criterion_main!(benches);
