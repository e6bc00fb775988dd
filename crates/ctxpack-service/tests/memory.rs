//! What an answer takes in memory, counted by the allocator (every byte
//! this test binary allocates goes through it): a text read from the
//! artifact store is in memory once while it is held for a client, not
//! twice — the sending budget (`max-response-bytes`) counts it once.

#![allow(clippy::unwrap_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

mod common;

/// The system's allocator, counting the bytes held now and the most held
/// since the count was last reset.
struct Counting;

static NOW: AtomicUsize = AtomicUsize::new(0);
static MOST: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = NOW.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
            MOST.fetch_max(now, Ordering::SeqCst);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        NOW.fetch_sub(layout.size(), Ordering::SeqCst);
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

#[tokio::test(flavor = "current_thread")]
async fn a_text_read_from_the_artifact_store_is_in_memory_once() {
    let dir = common::tempdir("memory");
    let artifacts =
        ctxpack_service::snapshots::Artifacts::open(dir.to_str().unwrap(), true).unwrap();
    let size = 8 << 20;
    let text = "The parser rejects trailing commas. ".repeat(size / 36);
    let hash = ctxpack_core::text_hash(&text);
    artifacts.put(&hash, &text).await.unwrap();
    drop(text);

    let before = NOW.load(Ordering::SeqCst);
    MOST.store(before, Ordering::SeqCst);
    let got = artifacts.get(&hash).await.unwrap().unwrap();
    let most = MOST.load(Ordering::SeqCst) - before;
    let held = NOW.load(Ordering::SeqCst) - before;
    assert!(got.len() > size - 64);
    // Held: the text, once. At most along the way: the text and a little,
    // not a second copy of it.
    assert!(
        held < got.len() + (64 << 10),
        "{held} bytes held for {}",
        got.len()
    );
    assert!(
        most < got.len() + got.len() / 4,
        "{most} bytes at most to read {}",
        got.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
