//! Laying an encoding's tokens out as the tables [`super::table`] reads:
//! run by `build.rs` for the built-in encodings (their tables are then
//! static data) and by the core for a tokenizer file loaded at run time.
//! The layout is described in `build.rs`.

/// One token in this many of each length is a fence.
pub(crate) const FENCE: usize = 16;

/// An encoding's tables, laid out.
pub(crate) struct Laid {
    /// The single bytes', the pairs', the longer tokens' records and the
    /// packed ranks, back to back.
    pub(crate) data: Vec<u8>,
    pub(crate) records_at: usize,
    pub(crate) ranks_at: usize,
    pub(crate) rank_bits: u32,
    /// Ordinary tokens.
    pub(crate) tokens: usize,
    /// For each length: where its records start (from `records_at`), how
    /// many there are, and the index of the first one's rank.
    pub(crate) lengths: Vec<(usize, usize, usize)>,
}

/// Lays out `tokens` (bytes and rank). Every byte must be a token of its
/// own, and no two tokens may share their bytes.
pub(crate) fn lay_out(tokens: &[(Vec<u8>, u32)]) -> Result<Laid, String> {
    let max_rank = tokens.iter().map(|&(_, r)| r).max().unwrap_or(0);
    let rank_bits = (32 - max_rank.leading_zeros()).max(1);
    let max_len = tokens.iter().map(|(b, _)| b.len()).max().unwrap_or(0);

    let mut single = vec![u32::MAX; 256];
    let mut pairs = vec![u32::MAX; 1 << 16];
    let mut by_len: Vec<Vec<(&[u8], u32)>> = vec![Vec::new(); max_len + 1];
    for (bytes, rank) in tokens {
        let slot = match bytes.len() {
            0 => return Err(format!("token {rank} has no bytes")),
            1 => &mut single[usize::from(bytes[0])],
            2 => &mut pairs[usize::from(bytes[0]) << 8 | usize::from(bytes[1])],
            n => {
                by_len[n].push((bytes, *rank));
                continue;
            }
        };
        if *slot != u32::MAX {
            return Err(format!("tokens {} and {rank} have the same bytes", *slot));
        }
        *slot = *rank;
    }
    if let Some(b) = single.iter().position(|&r| r == u32::MAX) {
        return Err(format!("byte {b:#04x} has no token of its own"));
    }

    let mut data = Vec::new();
    for r in single.iter().chain(&pairs) {
        data.extend_from_slice(&r.to_le_bytes());
    }
    let records_at = data.len();
    let mut lengths = vec![(0usize, 0usize, 0usize); max_len + 1];
    let mut ranks = Vec::new();
    for (len, class) in by_len.iter_mut().enumerate().skip(3) {
        class.sort_unstable();
        if let Some(pair) = class.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(format!(
                "tokens {} and {} have the same bytes",
                pair[0].1, pair[1].1
            ));
        }
        lengths[len] = (data.len() - records_at, class.len(), ranks.len());
        let fences = class.iter().step_by(FENCE);
        let between = class
            .iter()
            .enumerate()
            .filter(|(i, _)| i % FENCE != 0)
            .map(|(_, t)| t);
        for (bytes, rank) in fences.chain(between) {
            data.extend_from_slice(bytes);
            ranks.push(*rank);
        }
    }
    // Eight bytes after the last record, so every load of a record's head
    // is in bounds; four after the packed ranks likewise.
    data.extend_from_slice(&[0; 8]);
    let ranks_at = data.len();
    pack(&mut data, &ranks, rank_bits);
    data.extend_from_slice(&[0; 4]);
    Ok(Laid {
        data,
        records_at,
        ranks_at,
        rank_bits,
        tokens: tokens.len(),
        lengths,
    })
}

/// Appends `ranks` to `data`, `bits` bits each, little-endian.
fn pack(data: &mut Vec<u8>, ranks: &[u32], bits: u32) {
    let mut acc = 0u64;
    let mut held = 0;
    for &r in ranks {
        acc |= u64::from(r) << held;
        held += bits;
        while held >= 8 {
            data.push(acc as u8);
            acc >>= 8;
            held -= 8;
        }
    }
    if held > 0 {
        data.push(acc as u8);
    }
}
