use super::decode::NAMED;
use super::*;

fn decoded(text: &str) -> String {
    decode(text).iter().map(|u| u.c).collect()
}

#[test]
fn the_entity_names_are_sorted_for_the_search() {
    assert!(NAMED.windows(2).all(|w| w[0].0 < w[1].0));
    assert!(
        NAMED.iter().all(|(n, _, _)| n.len() <= 24),
        "a name too long"
    );
    // HTML's legacy set, all of it.
    assert_eq!(NAMED.iter().filter(|(_, _, legacy)| *legacy).count(), 106);
}

#[test]
fn escapes_are_decoded_to_a_fixed_point() {
    for (text, want) in [
        ("&lt;", "<"),
        ("&LT", "<"),
        ("&lt b", "< b"),
        ("&#60;", "<"),
        ("&#000000060;", "<"),
        ("&#x3C", "<"),
        ("&#x0003c;x", "<x"),
        ("&amp;lt;", "<"),
        ("&amp;amp;amp;lt;", "<"),
        ("&&#108;t;", "<"),
        ("&#38;lt;", "<"),
        ("%26lt;", "<"),
        ("%253C", "<"),
        ("%EF%BC%9C", "\u{ff1c}"),
        ("\\u003c", "<"),
        ("\\u{3c}", "<"),
        ("\\U0000003C", "<"),
        ("\\x3c", "<"),
        ("\\074", "<"),
        ("\\<", "<"),
        ("\\\\u003c", "<"),
        ("&lt;&frasl;", "<\u{2044}"),
        ("&copy;", "\u{a9}"),
        ("&xyzzy;", "\u{FDD0}"),
        ("AT&T and 100% of \\n", "AT&T and 100% of \\n"),
        ("&#xZZ;", "&#xZZ;"),
        ("&#99999999999;", "\u{FFFD}"),
        ("&", "&"),
        ("&&&&", "&&&&"),
        // Entities of invisible characters; names without a semicolon.
        ("&NegativeMediumSpace;", "\u{200b}"),
        ("&NegativeVeryThinSpace;", "\u{200b}"),
        ("&InvisibleTimes;&it;", "\u{2062}\u{2062}"),
        ("&laquo/", "\u{ab}/"),
        ("&uacutentrusted", "\u{fa}ntrusted"),
        ("&ltuntrusted;", "<untrusted;"),
        ("&notit;", "\u{ac}it;"),
        ("&lsqb user", "[ user"),
        ("&lsqb", "["),
        ("&lsqbuser", "&lsqbuser"),
        ("&lang=en", "&lang=en"),
    ] {
        assert_eq!(decoded(text), want, "{text:?}");
    }
    // Each decoded unit spans the bytes it came from.
    let units = decode("a&amp;lt;b");
    assert_eq!(
        units
            .iter()
            .map(|u| (u.c, u.start, u.end))
            .collect::<Vec<_>>(),
        vec![('a', 0, 1), ('<', 1, 9), ('b', 9, 10)]
    );
}

#[test]
fn characters_read_as_the_unicode_data_says() {
    let has = |c: char, want: &[u8]| alternatives(reading(c)).any(|a| a == want);
    for c in [
        '\u{2800}',
        '\u{3164}',
        '\u{115f}',
        '\u{200b}',
        '\u{e0041}',
        '\u{3000}',
        '\0',
        '\u{7}',
        '\u{85}',
        '\u{301}',
        // Drawn blank.
        '\u{1d159}',
        '\u{13441}',
        '\u{13442}',
    ] {
        assert_eq!(reading(c), b"", "U+{:04X}", c as u32);
    }
    for c in [
        '<', '[', '{', '❰', '⟪', '«', '《', '‹', '⟨', '〈', '＜', '˂', 'ᐸ', '⟦', '【', '⎡', '⎢',
        '⎣', '⎛', '⎧', '⎨', '⊏', '⸂', '⸜', '⌜', '⎰', '⎪',
    ] {
        assert!(has(c, &[OPEN]), "{c}");
    }
    for c in [
        '>', ']', '}', '❱', '⟫', '»', '》', '›', '＞', '⎤', '⎥', '⎦', '⎞', '⎭', '⊐', '⸃', '⎱', '⎪',
    ] {
        assert!(has(c, &[CLOSE]), "{c}");
    }
    // Quotation marks are no brackets.
    for c in ['“', '”', '‘', '’', '‛', '‟'] {
        assert!(!has(c, &[OPEN]) && !has(c, &[CLOSE]), "{c}");
    }
    for (c, as_) in [
        ('ᑯ', "d"),
        ('ꭇ', "r"),
        ('℮', "e"),
        ('ƽ', "s"),
        ('е', "e"),
        ('Ｕ', "u"),
        ('𝐮', "u"),
        ('ü', "u"),
        ('⁄', "/"),
        ('｜', "|"),
        ('ɴ', "n"),
        ('Ι', "i"),
        ('Ι', "l"),
        ('Ꮥ', "s"),
        // Enclosed letters without a decomposition.
        ('🅰', "a"),
        ('🆂', "s"),
        ('🅤', "u"),
        ('🇺', "u"),
        ('\u{1f18a}', "p"),
        // Spacing marks: their prototype, or nothing.
        ('\u{d02}', "o"),
        ('\u{d02}', ""),
        ('\u{903}', ":"),
        ('\u{903}', ""),
    ] {
        assert!(has(c, as_.as_bytes()), "{c}: {:?}", reading(c));
    }
    assert_eq!(reading('('), b"(");
    // What reads as `(` outside ASCII is a bracket too; only ASCII `(`
    // — what a defused bracket becomes — is none.
    assert!(has('（', &[OPEN]));
    assert_eq!(reading('東'), [OTHER]);
    assert_eq!(reading('\u{FDD0}'), [ANY, OR]);
}

#[test]
fn a_line_starts_after_a_line_break_or_its_spelling_and_quotes() {
    let starts = |text: &str, at: &str| {
        let units = Units::of(text);
        let mut i = 0;
        let mut k = 0;
        while let Some((u, next)) = units.at(i) {
            if text[u.start..].starts_with(at) {
                return units.line_starts_at(i);
            }
            (i, k) = (next, k + 1);
        }
        panic!("{at:?} not in {text:?} ({k} units)")
    };
    for text in [
        "[x",
        "a\n[x",
        "a\r[x",
        "a\n\u{200b} > >[x",
        "a<br>[x",
        "a<BR/>[x",
        "a</p>[x",
        "a<p class=\"y\">[x",
        "a<div>[x",
        "a<p[y>[x",
        "a&lt;li&gt;[x",
        "a\n>> [x",
        "> [x",
        "a\u{2028}[x",
    ] {
        assert!(starts(text, "[x"), "{text:?}");
    }
    for text in [
        "a[x", "a [x", "a\\\\ [x", "a\\x[x", "a<b>[x", "a<xbr>[x", "a</b>[x", "a> [x", "a<p>b[x",
        "n[x",
    ] {
        assert!(!starts(text, "[x"), "{text:?}");
    }
}
