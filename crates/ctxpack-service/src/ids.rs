//! The values a client names things by: ids in paths and headers, and how
//! much of a value a message may quote back.

/// At most this many characters of a value a client sent go into an
/// error message or a log line.
pub const ECHO: usize = 64;

/// `v`, cut to [`ECHO`] characters (and marked so when cut), quoted.
pub fn echo(v: &str) -> String {
    let mut cut: String = v.chars().take(ECHO).collect();
    if cut.len() < v.len() {
        cut.push('…');
    }
    format!("{cut:?}")
}

/// The most characters of an id.
pub const ID_CHARS: usize = 200;

/// Why `v` is no id for `field`: an id is 1 to [`ID_CHARS`] characters
/// without control characters.
pub fn id_error(field: &str, v: &str) -> Option<String> {
    (v.is_empty() || v.chars().count() > ID_CHARS || v.chars().any(char::is_control))
        .then(|| format!("{field}: must be 1 to {ID_CHARS} characters without control characters"))
}
