//! Cache-line prefetch hints for walks over host data.
//!
//! A host's answer is thousands of candidates whose ids, texts and
//! provenance each live in an allocation of their own, visited in rank
//! order, not in memory order: every first read of one is a cache miss,
//! and each miss waits for the one before. Asking for the lines of the
//! candidates a few places ahead lets those loads overlap with the work on
//! the current one. Hints change no result.
//!
//! Each walk asks ahead through [`ahead`]: admission's walk over the fused
//! order (records far ahead, their texts nearer), the move of each
//! candidate into its item, and a section's fill; the deduplicator's index
//! asks for its probes' slots together. Measured in interleaved runs of
//! the 10k-candidate pack natively: without any hint it took 10–20%
//! longer; without the hint of the move into items alone, about 3%
//! longer. Under wasm the hints are no-ops.

/// Asks the processor to start loading the cache line holding `p`. A
/// hint: it reads nothing into the program and cannot fault, whatever `p`
/// is. Only x86-64 has it here; elsewhere it does nothing.
#[inline(always)]
pub(crate) fn line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 has no architectural effect and never faults,
    // for any address; the SSE it needs is part of every x86-64.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// [`line()`] for each cache line of the value at `v` (up to 256 bytes).
#[inline(always)]
pub(crate) fn value<T>(v: &T) {
    let p: *const u8 = (v as *const T).cast();
    let mut at = 0;
    while at < size_of::<T>().min(256) {
        line(p.wrapping_add(at));
        at += 64;
    }
}

/// In a walk over `order` in rank order, at step `n`: gives `ask` the
/// element `distance` steps ahead, if there is one, to ask for the memory
/// it will read. The candidates of a host answer are visited in rank
/// order, not memory order, so each first read of one misses the cache;
/// asking ahead lets those misses overlap with the work in hand.
#[inline(always)]
pub(crate) fn ahead<T>(order: &[T], n: usize, distance: usize, ask: impl FnOnce(&T)) {
    if let Some(next) = order.get(n + distance) {
        ask(next);
    }
}
