//! A request's ids: `x-request-id` and the W3C trace context, as HTTP
//! and gRPC both read them from their headers.

use axum::http::HeaderMap;

/// The request's id (`x-request-id`, echoed when it is a short visible
/// ASCII string, else made) and its W3C trace context (`traceparent`,
/// continued when valid, else begun), on every log line of the request
/// and on its answer.
#[derive(Clone, Debug)]
pub struct RequestIds {
    /// `x-request-id`.
    pub request_id: String,
    /// The trace's 32 hex digits.
    pub trace_id: String,
    /// This service's span, 16 hex digits.
    pub span_id: String,
}

fn hex(n: usize) -> String {
    (0..n)
        .map(|_| char::from_digit(fastrand::u32(0..16), 16).unwrap_or('0'))
        .collect()
}

impl RequestIds {
    /// The ids of a request with `headers`.
    pub fn of(headers: &HeaderMap) -> RequestIds {
        let request_id = headers
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
            .map_or_else(|| hex(32), str::to_owned);
        let trace_id = headers
            .get("traceparent")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_traceparent)
            .unwrap_or_else(|| hex(32));
        RequestIds {
            request_id,
            trace_id,
            span_id: hex(16),
        }
    }

    /// The `traceparent` this service's span continues with.
    pub fn traceparent(&self) -> String {
        format!("00-{}-{}-01", self.trace_id, self.span_id)
    }
}

/// The trace id of a valid version-00 `traceparent`.
pub fn parse_traceparent(v: &str) -> Option<String> {
    let parts: Vec<&str> = v.trim().split('-').collect();
    let lower_hex = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    match parts.as_slice() {
        [version, trace, parent, flags]
            if lower_hex(version, 2)
                && *version != "ff"
                && lower_hex(trace, 32)
                && trace.bytes().any(|b| b != b'0')
                && lower_hex(parent, 16)
                && parent.bytes().any(|b| b != b'0')
                && lower_hex(flags, 2) =>
        {
            Some((*trace).to_owned())
        }
        _ => None,
    }
}

/// A value a client sent, as a log line may carry it: at most 128
/// characters, cut with `…` (a 10,000-character token subject made a
/// 10 kB line).
pub fn cut(value: &str) -> std::borrow::Cow<'_, str> {
    const MOST: usize = 128;
    match value.char_indices().nth(MOST) {
        None => value.into(),
        Some((end, _)) => format!("{}…", ctxpack_core::text::cut(value, ..end)).into(),
    }
}

/// The most refusal lines written a second (HTTP's `refused`, gRPC's
/// `not assembled`): a client refused in a loop cannot flood the log.
pub const REFUSAL_LINES: u32 = 10;

/// This second's refusal lines, and those left out since the last one
/// written.
struct Refusals {
    second: Option<std::time::Instant>,
    written: u32,
    suppressed: u64,
}

static REFUSALS: std::sync::Mutex<Refusals> = std::sync::Mutex::new(Refusals {
    second: None,
    written: 0,
    suppressed: 0,
});

/// Whether a refusal line may be written now: then how many were left
/// out since the last one written (to say in it); none past this second's
/// [`REFUSAL_LINES`], counted instead.
pub fn refusal_line() -> Option<u64> {
    let mut r = match REFUSALS.lock() {
        Ok(r) => r,
        Err(poisoned) => poisoned.into_inner(),
    };
    let now = std::time::Instant::now();
    if r.second
        .is_none_or(|s| now.duration_since(s) >= std::time::Duration::from_secs(1))
    {
        r.second = Some(now);
        r.written = 0;
    }
    if r.written < REFUSAL_LINES {
        r.written += 1;
        Some(std::mem::take(&mut r.suppressed))
    } else {
        r.suppressed += 1;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn a_client_sent_value_is_cut_for_the_log() {
        assert_eq!(cut("alice"), "alice");
        let long = "é".repeat(10_000);
        let logged = cut(&long);
        assert_eq!(logged.chars().count(), 129);
        assert!(logged.ends_with('…') && logged.starts_with("éé"));
        assert_eq!(cut(&"x".repeat(128)), "x".repeat(128));
    }
}
