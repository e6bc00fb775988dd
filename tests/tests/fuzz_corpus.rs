//! Replays the fuzz corpus (fuzz/corpus/<target>/, minimised by fuzz/run)
//! and any saved findings (fuzz/regressions/<target>/) through the same
//! checks the fuzz targets run, so what fuzzing found stays found.

#![allow(clippy::unwrap_used)]

fn replay(target: &str, run: fn(&[u8])) -> usize {
    let root = ctxpack_conformance::root().join("../fuzz");
    let mut n = 0;
    for dir in ["corpus", "regressions"] {
        let dir = root.join(dir).join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
        paths.sort();
        for path in paths {
            let data = std::fs::read(&path).unwrap();
            let result = std::panic::catch_unwind(|| run(&data));
            assert!(result.is_ok(), "{} panics", path.display());
            n += 1;
        }
    }
    n
}

#[test]
fn the_assemble_corpus_replays_without_a_finding() {
    let n = replay("assemble", ctxpack_conformance::fuzz::assemble);
    assert!(n >= 30, "only {n} inputs: the corpus went missing");
}

#[test]
fn the_route_corpus_replays_without_a_finding() {
    let n = replay("route", ctxpack_conformance::fuzz::route);
    assert!(n >= 1, "the corpus went missing");
}

#[test]
fn the_count_corpus_replays_without_a_finding() {
    let n = replay("count", ctxpack_conformance::fuzz::count);
    assert!(n >= 1, "the corpus went missing");
}

#[test]
fn the_fence_corpus_replays_without_a_finding() {
    let n = replay("fence", ctxpack_conformance::fuzz::fence);
    assert!(n >= 1, "the corpus went missing");
}
