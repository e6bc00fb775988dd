//! Cache-line prefetch hints for walks over host data.
//!
//! A host's answer is thousands of candidates whose ids, texts and
//! provenance each live in an allocation of their own, visited in rank
//! order, not in memory order: every first read of one is a cache miss,
//! and each miss waits for the one before. Asking for the lines of the
//! candidates a few places ahead lets those loads overlap with the work on
//! the current one. Hints change no result.

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

/// [`line`] for each cache line of the value at `v` (up to 256 bytes).
#[inline(always)]
pub(crate) fn value<T>(v: &T) {
    let p: *const u8 = (v as *const T).cast();
    let mut at = 0;
    while at < size_of::<T>().min(256) {
        line(p.wrapping_add(at));
        at += 64;
    }
}
