//! The fence's fold table (`fold.rs` in `OUT_DIR`): how a model reads each
//! code point — as nothing, a bracket, or letters — from the Unicode data
//! (regex-syntax's properties, unicode-normalization's NFKC,
//! unicode-security's confusables), for `src/fence/read.rs`.

use super::{Res, ranges};
use std::fmt::Write as _;
use std::path::Path;

/// What the fence's reading (`src/fence/read.rs`) takes each character
/// outside ASCII for, from the Unicode data: removed (invisible, a
/// control, a format or tag character, a space, a symbol whose UTS #39
/// prototype is a space, such as U+2800 BRAILLE PATTERN BLANK, or one
/// drawn blank, [`DRAWN_BLANK`]), an opening or closing bracket (open and
/// close punctuation, editorial brackets, the pieces large brackets are
/// drawn with, [`drawn_bracket`]), or the ASCII text it reads as — its
/// NFKC form in lower case without marks, and where that is not ASCII,
/// its UTS #39 skeleton (unicode-security's `confusables.txt`); an
/// enclosed letter with neither as its letter ([`enclosed_letters`]); a
/// spacing mark (Mc) as its prototype or nothing. Marks that take no
/// space, and characters that read as none of these, are left out: the
/// former read as nothing, the latter as themselves.
pub(super) fn write_fold(out: &Path) -> Res<()> {
    let classes = Classes {
        removed: ranges(REMOVED)?,
        open: ranges(OPENING)?,
        close: ranges(CLOSING)?,
        spacing_marks: ranges(r"\p{Mc}")?,
    };
    let letters = enclosed_letters()?;
    let siblings = siblings();
    let mut entries: Vec<(u32, String)> = Vec::new();
    let mut blank = Vec::new();
    for c in (0x80..=0x10_FFFFu32).filter_map(char::from_u32) {
        let cp = u32::from(c);
        if within(&classes.removed, cp) {
            continue;
        }
        if DRAWN_BLANK.contains(&cp) {
            blank.push(cp);
            continue;
        }
        if let Some(reading) = drawn_bracket(cp) {
            entries.push((cp, reading.to_owned()));
            continue;
        }
        if let Ok(k) = letters.binary_search_by_key(&cp, |&(at, _)| at) {
            entries.push((cp, letters[k].1.to_string()));
            continue;
        }
        let mark = unicode_normalization::char::is_combining_mark(c);
        let spacing = within(&classes.spacing_marks, cp);
        if mark && !spacing {
            // A mark that takes no space reads as nothing, as the run
            // time's check of unicode-normalization's own table says.
            continue;
        }
        let readings = readings_of(c, &classes, &siblings);
        if readings.iter().all(String::is_empty) {
            // (Combining marks are dropped at run time, by
            // unicode-normalization's own table.)
            if !mark {
                blank.push(cp);
            }
            continue;
        }
        let mut alternatives = alternatives(cp, &readings, &classes);
        if spacing && !alternatives.contains(&String::new()) {
            // A spacing mark is drawn, yet may be taken for part of the
            // letter before it: it reads as its prototype or as nothing.
            alternatives.push(String::new());
        }
        // (A mark that reads as nothing but nothing needs no entry.)
        if alternatives.is_empty()
            || alternatives == [c.to_string()]
            || (mark && alternatives == [""])
        {
            continue;
        }
        // Alternatives apart by U+0005, in one order, so that characters
        // that read alike share their entry.
        alternatives.sort_unstable();
        entries.push((cp, alternatives.join("\u{5}")));
    }
    let removed = removed_ranges(&classes.removed, &blank);
    write_fold_table(out, &removed, &entries)
}

/// The character classes the fold reads by.
struct Classes {
    removed: Vec<(u32, u32)>,
    open: Vec<(u32, u32)>,
    close: Vec<(u32, u32)>,
    /// Spacing marks (Mc): drawn, so they read as their prototype too.
    spacing_marks: Vec<(u32, u32)>,
}

/// The enclosed letters Unicode gives no decomposition, nor UTS #39 a
/// prototype, each with the letter it shows: the regional indicators
/// (from their property, `A` to `Z` in order), and the negative circled
/// and negative squared capitals (see [`ENCLOSED`]).
fn enclosed_letters() -> Res<Vec<(u32, char)>> {
    let mut letters = Vec::new();
    let indicators = ranges(r"\p{Regional_Indicator}")?;
    let runs = indicators.iter().map(|&(a, b)| (a, b - a + 1));
    for (first, len) in runs.chain(ENCLOSED) {
        if len != 26 {
            return Err(format!("U+{first:04X}: a run of {len} letters, not 26").into());
        }
        for (k, letter) in (0..len).zip(b'a'..=b'z') {
            letters.push((first + k, char::from(letter)));
        }
    }
    letters.extend(ENCLOSED_SINGLE);
    // A letter of no structure's word reads as any other character.
    letters.retain(|&(_, letter)| ALPHABET.contains(letter));
    letters.sort_unstable();
    Ok(letters)
}

/// Whether `c` is in one of the ranges of `set`.
fn within(set: &[(u32, u32)], c: u32) -> bool {
    set.iter().any(|&(a, b)| a <= c && c <= b)
}

/// A string as it reads: NFKC (decomposed, so that marks come apart),
/// lower case, without marks or removed characters.
fn plain(s: &str, removed: &[(u32, u32)]) -> String {
    use unicode_normalization::UnicodeNormalization;
    let lower: String = s.nfkd().collect::<String>().to_lowercase();
    lower
        .nfkd()
        .filter(|&c| {
            !unicode_normalization::char::is_combining_mark(c) && !within(removed, u32::from(c))
        })
        .collect()
}

/// The ASCII characters UTS #39 takes for one another: `I`, `1` and `|`
/// share `l`'s prototype, `0` `O`'s. A character that reads as one of
/// them reads as each.
fn siblings() -> Vec<(String, Vec<String>)> {
    let mut siblings: Vec<(String, Vec<String>)> = Vec::new();
    for a in (0x21u8..0x7F).map(char::from) {
        let p: String = unicode_security::skeleton(&a.to_string())
            .collect::<String>()
            .to_lowercase();
        let a = a.to_ascii_lowercase().to_string();
        match siblings.iter_mut().find(|(q, _)| *q == p) {
            Some((_, all)) if !all.contains(&a) => all.push(a),
            Some(_) => {}
            None => siblings.push((
                p.clone(),
                vec![p.clone(), a].into_iter().fold(Vec::new(), |mut v, x| {
                    if !v.contains(&x) {
                        v.push(x);
                    }
                    v
                }),
            )),
        }
    }
    siblings
}

/// Every way `c` reads: every form it reaches by compatibility
/// decomposition, either case (Cherokee folds to upper case, `ς` to `σ`
/// through `Σ`) and its UTS #39 skeleton, each read plain (a blank one as
/// nothing); and a Latin letter the confusables do not fold (small
/// capitals, letters with hooks and strokes) as the letter its name says.
fn readings_of(c: char, classes: &Classes, siblings: &[(String, Vec<String>)]) -> Vec<String> {
    use unicode_normalization::UnicodeNormalization;
    let mut forms: Vec<String> = vec![c.to_string()];
    let mut k = 0;
    while k < forms.len() && forms.len() < 24 {
        let x = forms[k].clone();
        k += 1;
        let next = [
            x.nfkd().collect::<String>(),
            x.to_lowercase(),
            x.to_uppercase(),
            unicode_security::skeleton(&x).collect(),
            plain(&x, &classes.removed),
        ];
        for y in next {
            if !y.is_empty() && !forms.contains(&y) {
                forms.push(y);
            }
        }
    }
    let mut readings: Vec<String> = Vec::new();
    for x in &forms {
        let r = plain(x, &classes.removed);
        let r = if r.chars().all(char::is_whitespace) {
            String::new()
        } else {
            r
        };
        let same = siblings
            .iter()
            .find(|(p, _)| *p == r)
            .map(|(_, all)| all.clone());
        for r in same.unwrap_or_else(|| vec![r]) {
            if !readings.contains(&r) {
                readings.push(r);
            }
        }
    }
    if let Some(letter) = unicode_names2::name(c).and_then(|n| latin_letter(&n.to_string())) {
        let r = letter.to_string();
        if !readings.contains(&r) {
            readings.push(r);
        }
    }
    readings
}

/// What the readings of the character `cp` are to the fence: nothing, an
/// opening or a closing bracket (U+0001, U+0002), or the ASCII a reading
/// starts with (followed by U+0003 where more follows that reads as no
/// structure's: it can only end a word).
fn alternatives(cp: u32, readings: &[String], classes: &Classes) -> Vec<String> {
    let mut alternatives: Vec<String> = Vec::new();
    let mut add = |a: String| {
        if !alternatives.contains(&a) {
            alternatives.push(a);
        }
    };
    for read in readings {
        if read.is_empty() {
            add(String::new());
        } else if within(&classes.open, cp) || read.starts_with(['<', '[', '(']) {
            add("\u{1}".to_owned());
        } else if within(&classes.close, cp) || read.starts_with(['>', ']', ')']) {
            add("\u{2}".to_owned());
        } else {
            let ascii: String = read
                .chars()
                .take_while(|&c| c.is_ascii_punctuation() || ALPHABET.contains(c))
                .take(MAX_READ)
                .collect();
            if ascii.is_empty() {
                continue;
            }
            if ascii == *read {
                add(ascii);
            } else if ascii.ends_with(|c| WORD_ENDS.contains(c)) {
                add(format!("{ascii}\u{3}"));
            }
        }
    }
    alternatives
}

/// The removed characters outside ASCII: the ranges of the classes and
/// the `blank` symbols, merged.
fn removed_ranges(removed: &[(u32, u32)], blank: &[u32]) -> Vec<(u32, u32)> {
    let mut gone: Vec<(u32, u32)> = removed
        .iter()
        .copied()
        .filter(|&(_, b)| b >= 0x80)
        .collect();
    gone.extend(blank.iter().map(|&c| (c, c)));
    gone.sort_unstable();
    let mut merged: Vec<(u32, u32)> = Vec::new();
    for (a, b) in gone {
        match merged.last_mut() {
            Some(last) if a <= last.1 + 1 => last.1 = last.1.max(b),
            _ => merged.push((a.max(0x80), b)),
        }
    }
    merged
}

/// Delta-encoded code points, and where to start a search from.
type Deltas = (Vec<u8>, Vec<(u32, u16)>);

/// The code points `from` as the distance from the one before (from
/// 0x80), a zero and three bytes for a distance over 255; and every 64th
/// entry's code point with where its distance is, to start a search from.
fn deltas(from: &[u32]) -> Res<Deltas> {
    let mut deltas: Vec<u8> = Vec::new();
    let mut index: Vec<(u32, u16)> = Vec::new();
    let mut before = 0x80u32;
    for (k, &cp) in from.iter().enumerate() {
        if k % 64 == 0 {
            index.push((cp, u16::try_from(deltas.len())?));
        }
        match u8::try_from(cp - before) {
            Ok(d) if d > 0 => deltas.push(d),
            _ => {
                deltas.push(0);
                deltas.extend_from_slice(&cp.to_le_bytes()[..3]);
            }
        }
        before = cp;
    }
    Ok((deltas, index))
}

/// `fold.rs`: the removed ranges, and each character's readings
/// (`entries`), stored once each and found by the delta-encoded code
/// points.
fn write_fold_table(out: &Path, removed: &[(u32, u32)], entries: &[(u32, String)]) -> Res<()> {
    let mut texts: Vec<String> = Vec::new();
    let mut from = Vec::with_capacity(entries.len());
    let mut to = Vec::with_capacity(entries.len());
    for (cp, value) in entries {
        let at = match texts.iter().position(|t| t == value) {
            Some(at) => at,
            None => {
                texts.push(value.clone());
                texts.len() - 1
            }
        };
        from.push(*cp);
        to.push(u16::try_from(at)?);
    }
    let (deltas, index) = deltas(&from)?;
    let mut rs = String::new();
    writeln!(
        rs,
        "// Generated by build.rs from regex-syntax's Unicode tables, \
         unicode-normalization's and unicode-security's (Unicode {}.{}.{}).",
        unicode_security::UNICODE_VERSION.0,
        unicode_security::UNICODE_VERSION.1,
        unicode_security::UNICODE_VERSION.2
    )?;
    writeln!(
        rs,
        "static REMOVED: [(u32, u32); {}] = {removed:?};",
        removed.len()
    )?;
    writeln!(
        rs,
        "static READ_DELTAS: [u8; {}] = {deltas:?};",
        deltas.len()
    )?;
    writeln!(
        rs,
        "static READ_INDEX: [(u32, u16); {}] = {index:?};",
        index.len()
    )?;
    writeln!(rs, "static READ_AS: [u16; {}] = {to:?};", to.len())?;
    // The readings back to back, and where each begins.
    let mut starts: Vec<u16> = Vec::new();
    let mut all = String::new();
    for t in &texts {
        starts.push(u16::try_from(all.len())?);
        all.push_str(t);
    }
    starts.push(u16::try_from(all.len())?);
    writeln!(rs, "static READINGS: &str = {all:?};")?;
    writeln!(
        rs,
        "static READING_AT: [u16; {}] = {starts:?};",
        starts.len()
    )?;
    // The first bytes of the characters that read as opening brackets.
    let mut leads: Vec<u8> = entries
        .iter()
        .filter(|(_, v)| v.split('\u{5}').any(|a| a == "\u{1}"))
        .filter_map(|&(cp, _)| char::from_u32(cp))
        .map(|c| c.encode_utf8(&mut [0; 4]).as_bytes()[0])
        .collect();
    leads.sort_unstable();
    leads.dedup();
    writeln!(
        rs,
        "#[cfg(test)]\npub(crate) const ALPHABET: &str = {ALPHABET:?};"
    )?;
    writeln!(
        rs,
        "#[cfg(test)]\npub(crate) const WORD_ENDS: &str = {WORD_ENDS:?};"
    )?;
    writeln!(rs, "static OPEN_LEADS: [u8; {}] = {leads:?};", leads.len())?;
    std::fs::write(out.join("fold.rs"), rs)?;
    Ok(())
}

/// The letters of the words the fence looks for (see `src/fence.rs`): a
/// character that reads as any other letter reads as no structure's.
const ALPHABET: &str = "abcdefhiklmnoprstuvxy";

/// What the words the fence looks for end with that is no bracket
/// (`untrusted`, `source:`; a role's name and a chat format's word end
/// with a closing bracket), and a chat marker's bar, which only its first
/// symbol must be: a character that reads as some letters and then as no
/// structure's can only be of use there.
const WORD_ENDS: &str = "d:|";

/// The letter a Latin letter's Unicode name says it is: `LATIN [SMALL |
/// CAPITAL ]LETTER [SMALL CAPITAL |SMALL |CAPITAL ]X[ WITH …]`.
fn latin_letter(name: &str) -> Option<char> {
    let rest = name.strip_prefix("LATIN ")?;
    let rest = rest
        .strip_prefix("SMALL ")
        .or_else(|| rest.strip_prefix("CAPITAL "))
        .unwrap_or(rest);
    let rest = rest.strip_prefix("LETTER ")?;
    let rest = ["SMALL CAPITAL ", "SMALL ", "CAPITAL "]
        .iter()
        .find_map(|p| rest.strip_prefix(p))
        .unwrap_or(rest);
    let mut chars = rest.chars();
    let letter = chars.next().filter(char::is_ascii_uppercase)?;
    let tail = chars.as_str();
    (tail.is_empty() || tail.starts_with(" WITH ")).then(|| letter.to_ascii_lowercase())
}

/// Runs of 26 enclosed capitals, `A` to `Z`, that have neither a
/// decomposition nor a UTS #39 prototype: only their names say which
/// letter each shows, and the tests' independent reading learns them
/// from the names, so this one lists them: NEGATIVE CIRCLED LATIN
/// CAPITAL LETTER A–Z (U+1F150–U+1F169) and NEGATIVE SQUARED LATIN
/// CAPITAL LETTER A–Z (U+1F170–U+1F189). The regional indicators come
/// from their property.
const ENCLOSED: [(u32, u32); 2] = [(0x1F150, 26), (0x1F170, 26)];

/// Single enclosed letters of the same kind: CROSSED NEGATIVE SQUARED
/// LATIN CAPITAL LETTER P, SQUARED LATIN SMALL LETTER D.
const ENCLOSED_SINGLE: [(u32, char); 2] = [(0x1F18A, 'p'), (0x1F1A5, 'd')];

/// Symbols whose glyph is empty, which no Unicode property says (they are
/// neither default ignorable nor white space, and UTS #39 gives them no
/// prototype): U+1D159 MUSICAL SYMBOL NULL NOTEHEAD, U+13441 EGYPTIAN
/// HIEROGLYPH FULL BLANK and U+13442 EGYPTIAN HIEROGLYPH HALF BLANK. (The
/// blank Braille pattern's prototype is a space; the Hangul fillers are
/// default ignorable.)
const DRAWN_BLANK: [u32; 3] = [0x1D159, 0x13441, 0x13442];

/// The pieces large brackets are drawn with, and the square subset
/// symbols and corners written as brackets, which are math symbols (Sm,
/// So) to Unicode, not open or close punctuation, and have no prototype:
/// their readings, U+0001 for an opening bracket, U+0002 for a closing
/// one, both for a piece that can be either.
fn drawn_bracket(cp: u32) -> Option<&'static str> {
    Some(match cp {
        // ⎛ ⎜ ⎝, ⎡ ⎢ ⎣, ⎧ ⎨ ⎩: the left parenthesis's, square bracket's
        // and curly bracket's pieces; 🯌 RAISED SMALL LEFT SQUARE
        // BRACKET; ⊏ SQUARE IMAGE OF, ⊑ with EQUAL TO; ⌜ ⌞, the top and
        // bottom left corners.
        0x239B..=0x239D
        | 0x23A1..=0x23A3
        | 0x23A7..=0x23A9
        | 0x1FBCC
        | 0x228F
        | 0x2291
        | 0x22E4
        | 0x231C
        | 0x231E => "\u{1}",
        // Their right counterparts.
        0x239E..=0x23A0
        | 0x23A4..=0x23A6
        | 0x23AB..=0x23AD
        | 0x2290
        | 0x2292
        | 0x22E5
        | 0x231D
        | 0x231F => "\u{2}",
        // ⎪ CURLY BRACKET EXTENSION, ⎰ and ⎱ (UPPER LEFT OR LOWER RIGHT
        // CURLY BRACKET SECTION and the other).
        0x23AA | 0x23B0 | 0x23B1 => "\u{1}\u{5}\u{2}",
        _ => return None,
    })
}

/// The longest ASCII reading kept for one character.
const MAX_READ: usize = 8;

/// What a model does not see, or sees as a space: default-ignorable code
/// points, controls, format characters (tags among them), separators and
/// white space.
const REMOVED: &str = r"[\p{Default_Ignorable_Code_Point}\p{Cc}\p{Cf}\p{Z}\p{White_Space}]";
/// Opening brackets: open punctuation, initial quotation marks that
/// mirror (`«`, `‹`), and initial punctuation that is no quotation mark
/// (the editorial brackets `⸂`, `⸉`, `⸜`).
const OPENING: &str = r"[\p{Ps}[\p{Pi}&&\p{Bidi_Mirrored}][\p{Pi}--\p{Quotation_Mark}]]";
/// Closing brackets, likewise.
const CLOSING: &str = r"[\p{Pe}[\p{Pf}&&\p{Bidi_Mirrored}][\p{Pf}--\p{Quotation_Mark}]]";
