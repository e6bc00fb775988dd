//! Helpers the service's test files share.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

static N: AtomicU32 = AtomicU32::new(0);

/// A fresh, empty directory of this test process, named for `what`.
pub fn tempdir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "ctxpack-{what}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    #[allow(clippy::unwrap_used)]
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
