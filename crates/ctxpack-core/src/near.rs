//! The names nearest a name no table has: what a refusal suggests (a
//! model's profile, a tokenizer file's pattern), and how it shows the
//! name it was given.

/// The three names nearest `key`: those it begins (a name cut short) or
/// whose letters and digits hold its own (`llama3` in
/// `llama-3.1-8b-instruct`), then by edit distance, in the table's order
/// where as near.
pub(crate) fn nearest<S: AsRef<str>>(key: &str, names: &[S]) -> Vec<String> {
    let plain = |s: &str| -> String { s.chars().filter(|c| c.is_alphanumeric()).collect() };
    let bare = plain(key);
    let distance = |n: &str| {
        let held = bare.chars().count() >= 3 && plain(n).contains(&bare);
        if n.starts_with(key) || held {
            0
        } else {
            edits(key, n)
        }
    };
    let mut scored: Vec<(usize, &str)> = names
        .iter()
        .map(|n| (distance(n.as_ref()), n.as_ref()))
        .collect();
    // The three smallest, each the first of its distance: a selection,
    // not a sort (a sort is code the component would carry for this).
    let mut out = Vec::with_capacity(3);
    while out.len() < 3 && !scored.is_empty() {
        let mut best = 0;
        for (i, s) in scored.iter().enumerate() {
            if s.0 < scored[best].0 {
                best = i;
            }
        }
        out.push(scored.remove(best).1.to_owned());
    }
    out
}

/// The Levenshtein distance between `a` and `b`, by characters.
pub(crate) fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diagonal + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// A name as a refusal shows it: quoted, anything but printable ASCII
/// escaped (so a look-alike letter shows as what it is), at most 60
/// characters of it.
pub(crate) fn shown(name: &str) -> String {
    let mut out = String::from("\"");
    for (i, c) in name.chars().enumerate() {
        if i == 60 {
            out.push('…');
            break;
        }
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => out.extend(c.escape_unicode()),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests;
