//! The JavaScript spelling of the core's JSON: object keys in camelCase.
//!
//! The core reads and writes the WIT's names in kebab-case
//! (`"keep-last"`); a JavaScript caller writes `keepLast`. Every JSON
//! object key is a record field or a variant case — the WIT has no maps —
//! so the keys are rewritten in the text, one pass, and values (enum
//! names such as `"over-budget"`, texts, ids) are left as they are. The
//! WIT's words start with a letter and hold no capitals, so the two
//! spellings turn into each other without loss.

/// `keep-last` → `keepLast`.
pub fn camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '-' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `keepLast` → `keep-last`.
pub fn kebab(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('-');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `json` with every object key camelCased.
pub fn camel_keys(json: &str) -> String {
    rewrite_keys(json, b'-', camel)
}

/// `json` with every object key in kebab-case.
pub fn kebab_keys(json: &str) -> String {
    rewrite_keys(json, 0, kebab)
}

/// Copies `json`, passing each object key that holds `marker` (or, with
/// marker 0, an ASCII capital) through `spell`. A key holding an escape
/// is copied as it is: no WIT name has one. Text that is not JSON comes
/// out as it went in, for the parser to refuse.
fn rewrite_keys(json: &str, marker: u8, spell: fn(&str) -> String) -> String {
    let bytes = json.as_bytes();
    let mut out = String::with_capacity(json.len() + json.len() / 16);
    let mut copied = 0;
    let mut i = 0;
    // Each string: its opening quote, then the first quote not escaped
    // (preceded by an even run of backslashes). memchr finds them 16 bytes
    // at a time.
    while let Some(open) = find(bytes, i, b'"') {
        let start = open + 1;
        let mut end = bytes.len();
        let mut from = start;
        while let Some(q) = find(bytes, from, b'"') {
            let slashes = bytes[start..q]
                .iter()
                .rev()
                .take_while(|&&b| b == b'\\')
                .count();
            if slashes % 2 == 0 {
                end = q;
                break;
            }
            from = q + 1;
        }
        let mut k = end + 1;
        while k < bytes.len() && matches!(bytes[k], b' ' | b'\t' | b'\n' | b'\r') {
            k += 1;
        }
        if k < bytes.len() && bytes[k] == b':' {
            let key = &bytes[start..end];
            let wanted = if marker == 0 {
                key.iter().any(u8::is_ascii_uppercase)
            } else {
                key.contains(&marker)
            };
            // `start..end` lies between two ASCII quotes: char boundaries.
            if wanted
                && !key.contains(&b'\\')
                && let Some(key) = json.get(start..end)
            {
                out.push_str(ctxpack_core::text::cut(json, copied..start));
                out.push_str(&spell(key));
                copied = end;
            }
        }
        i = end + 1;
    }
    out.push_str(ctxpack_core::text::cut(json, copied..));
    out
}

/// The position of the first `byte` in `bytes` from `from` on.
fn find(bytes: &[u8], from: usize, byte: u8) -> Option<usize> {
    memchr::memchr(byte, bytes.get(from..)?).map(|p| p + from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_change_and_values_do_not() {
        let kebab_text = r#"{"keep-last":6,"reason":"over-budget","drop":{"duplicate-of":"a-b"},"list":[{"source-kind":"kb"}],"text":"\"x-y\": 1"}"#;
        let camel_text = r#"{"keepLast":6,"reason":"over-budget","drop":{"duplicateOf":"a-b"},"list":[{"sourceKind":"kb"}],"text":"\"x-y\": 1"}"#;
        assert_eq!(camel_keys(kebab_text), camel_text);
        assert_eq!(kebab_keys(camel_text), kebab_text);
    }

    #[test]
    fn spaced_json_and_digits_and_unicode_go_both_ways() {
        let text = "{ \"l0-tokens\" : 1, \"stage-id\":\n \"é-€\", \"x\": {\"a-b-c\" :[\"q-r\"]}}";
        let camel_text = camel_keys(text);
        assert_eq!(
            camel_text,
            "{ \"l0Tokens\" : 1, \"stageId\":\n \"é-€\", \"x\": {\"aBC\" :[\"q-r\"]}}"
        );
        assert_eq!(kebab_keys(&camel_text), text);
    }

    #[test]
    fn text_that_is_not_json_comes_back_as_it_went() {
        for text in [
            "",
            "\"",
            "{\"a-b",
            "{\"a-b\"",
            "\"\\",
            "{\"a\\\"-b\": 1}",
            "[1, 2]",
        ] {
            assert_eq!(camel_keys(text), text);
            assert_eq!(kebab_keys(text), text);
        }
    }
}
