//! Text cut at byte offsets, the one way ctxpack does it (the core, and
//! the crates that bind it): the
//! `clippy::string_slice` lint refuses `&s[a..b]` everywhere else. An
//! offset inside a character (a fault in the code that found it: text of
//! any Unicode reaches the core) would panic, and a panic through the
//! component is a trap that kills the instance. Here it moves back to the
//! character's start instead, so a cut never panics; a debug build (every
//! test, the fuzz targets) fails on it, so the fault is found.

use std::ops::{Bound, RangeBounds};

/// `s` from `range`'s start to its end, byte offsets; one inside a
/// character is moved back to where it starts, and one past the end to
/// the end.
pub fn cut<R: RangeBounds<usize>>(s: &str, range: R) -> &str {
    let start = match range.start_bound() {
        Bound::Included(&n) => n,
        Bound::Excluded(&n) => n.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&n) => n.saturating_add(1),
        Bound::Excluded(&n) => n,
        Bound::Unbounded => s.len(),
    };
    debug_assert!(
        start <= end && s.is_char_boundary(start) && s.is_char_boundary(end),
        "a cut at {start}..{end} of a text of {} bytes, inside a character or out of it",
        s.len()
    );
    let start = s.floor_char_boundary(start);
    let end = s.floor_char_boundary(end).max(start);
    s.get(start..end).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn a_cut_on_boundaries_is_the_slice() {
        let s = "日本語 text";
        assert_eq!(cut(s, 3..9), "本語");
        assert_eq!(cut(s, ..3), "日");
        assert_eq!(cut(s, 10..), "text");
        assert_eq!(cut(s, ..), s);
    }

    #[test]
    #[cfg(not(debug_assertions))]
    fn a_cut_inside_a_character_moves_back_to_its_start() {
        assert_eq!(cut("日本", 1..4), "日");
        assert_eq!(cut("日本", 4..), "本");
        assert_eq!(cut("ab", 5..9), "");
    }
}
