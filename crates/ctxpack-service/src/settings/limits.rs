//! `[limits]`: what one client may take, of the listener and of each
//! request.

use super::LimitsFile;
use super::error::{SettingsError, at};
use std::path::Path;

fn at_least_1<T: PartialOrd + From<u8> + Copy>(
    path: &Path,
    key: &str,
    v: Option<T>,
    default: T,
) -> Result<T, SettingsError> {
    match v {
        Some(v) if v < T::from(1) => Err(at(path, &format!("limits.{key}"), "must be at least 1")),
        Some(v) => Ok(v),
        None => Ok(default),
    }
}

pub(super) fn listen_limits(
    path: &Path,
    l: &LimitsFile,
) -> Result<crate::listen::Limits, SettingsError> {
    let d = crate::listen::Limits::default();
    let ms = |key: &str, v: Option<u64>, d: std::time::Duration| {
        at_least_1(path, key, v, d.as_millis() as u64).map(std::time::Duration::from_millis)
    };
    Ok(crate::listen::Limits {
        max_connections: at_least_1(
            path,
            "max-connections",
            l.max_connections,
            d.max_connections,
        )?,
        max_connections_per_client: at_least_1(
            path,
            "max-connections-per-client",
            l.max_connections_per_client,
            d.max_connections_per_client,
        )?,
        header_timeout: ms("header-timeout-ms", l.header_timeout_ms, d.header_timeout)?,
        body_timeout: ms("body-timeout-ms", l.body_timeout_ms, d.body_timeout)?,
        shutdown: ms("shutdown-ms", l.shutdown_ms, d.shutdown)?,
        send_timeout: ms("send-timeout-ms", l.send_timeout_ms, d.send_timeout)?,
        response_bytes: at_least_1(
            path,
            "max-response-bytes",
            l.max_response_bytes,
            d.response_bytes,
        )?,
    })
}

pub(super) fn request_limits(path: &Path, l: &LimitsFile) -> Result<RequestLimits, SettingsError> {
    let d = RequestLimits::default();
    let rate = match l.requests_per_second {
        Some(r) if !(r.is_finite() && r >= 0.0) => {
            return Err(at(
                path,
                "limits.requests-per-second",
                "must be 0 (no limit) or more",
            ));
        }
        Some(r) => r,
        None => d.requests_per_second,
    };
    Ok(RequestLimits {
        requests_per_second: rate,
        burst: at_least_1(path, "burst", l.burst, d.burst)?,
        instructions: at_least_1(path, "max-instructions", l.max_instructions, d.instructions)?,
        conversation_turns: at_least_1(
            path,
            "max-conversation-turns",
            l.max_conversation_turns,
            d.conversation_turns,
        )?,
        stage_summaries: at_least_1(
            path,
            "max-stage-summaries",
            l.max_stage_summaries,
            d.stage_summaries,
        )?,
        scopes: at_least_1(path, "max-scopes", l.max_scopes, d.scopes)?,
        candidates: at_least_1(path, "max-candidates", l.max_candidates, d.candidates)?,
    })
}

/// What one request may hold (`[limits]`), checked before anything runs or
/// is recorded, and each tenant's request rate.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestLimits {
    /// A tenant's sustained requests per second; 0: no limit.
    pub requests_per_second: f64,
    /// Requests a tenant may send at once above the rate.
    pub burst: u32,
    /// Most `instructions`.
    pub instructions: usize,
    /// Most `conversation` turns.
    pub conversation_turns: usize,
    /// Most `stage-summaries`.
    pub stage_summaries: usize,
    /// Most `context.scopes`.
    pub scopes: usize,
    /// Most candidates one store answer may give.
    pub candidates: usize,
}

impl Default for RequestLimits {
    fn default() -> Self {
        RequestLimits {
            requests_per_second: 200.0,
            burst: 400,
            instructions: 256,
            conversation_turns: 1000,
            stage_summaries: 256,
            scopes: 64,
            candidates: 1000,
        }
    }
}

impl RequestLimits {
    /// Refuses a request holding more than the limits allow, naming the
    /// field.
    pub fn check(&self, r: &ctxpack_core::AssembleRequest) -> Result<(), OverLimit> {
        let over = |field: &'static str, given: usize, most: usize| {
            if given > most {
                Err(OverLimit { field, given, most })
            } else {
                Ok(())
            }
        };
        over("instructions", r.instructions.len(), self.instructions)?;
        over(
            "conversation",
            r.conversation.len(),
            self.conversation_turns,
        )?;
        over(
            "stage-summaries",
            r.stage_summaries.len(),
            self.stage_summaries,
        )?;
        over("context.scopes", r.context.scopes.len(), self.scopes)
    }
}

/// A request holding more than `[limits]` allow: the field, how many it
/// holds, and the most.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("request.{field}: {given} given, at most {most} (limits)")]
pub struct OverLimit {
    /// The request's field (`instructions`, `context.scopes`).
    pub field: &'static str,
    /// How many it holds.
    pub given: usize,
    /// The most allowed.
    pub most: usize,
}
