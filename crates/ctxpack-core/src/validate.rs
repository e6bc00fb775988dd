//! Checking a builder's configuration and a request before anything is
//! counted or asked of a host. Every refusal names the field by its path
//! as a user wrote it (`request.conversation[3].tool-call-id`), built from
//! the path of the value checked.

use crate::config::{BuilderConfig, Plan};
use crate::error::Error;
use crate::types::{AssembleRequest, Role, Tokenizer};
use std::collections::HashMap;

/// What a field must hold beyond its type for [`request`] to take it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// A text of at least one character.
    NotEmpty,
    /// A text with a character that is not white space (`str::trim`'s).
    NotBlank,
    /// A number of at least 1.
    AtLeastOne,
}

/// The fields of a request [`request`] refuses by a rule of their own, by
/// the WIT's record (or variant) and field (or case): `ctxpack-codegen`
/// writes them into the JSON Schemas of the service's document, and a test
/// holds [`request`] to each.
pub const RULES: &[(&str, &str, Rule)] = &[
    ("assemble-request", "model", Rule::NotBlank),
    ("agent-context", "session-id", Rule::NotEmpty),
    ("workflow-status", "status", Rule::NotEmpty),
    ("workflow-status", "stage-id", Rule::NotEmpty),
    ("conversation-turn", "tool-call-id", Rule::NotEmpty),
    ("stage-summary", "stage-id", Rule::NotEmpty),
    ("tokenizer", "named", Rule::NotBlank),
    ("tokenizer", "host", Rule::NotBlank),
    ("tokenizer", "chars-per-token", Rule::AtLeastOne),
];

/// Checks a builder's configuration.
pub(crate) fn config(config: &BuilderConfig) -> Result<(), Error> {
    for (i, t) in config.preload.iter().enumerate() {
        tokenizer(t, &format!("config.preload[{i}]"))?;
    }
    let t = config.near_duplicate_threshold;
    if !(t > 0.0 && t <= 1.0) {
        return Err(Error::invalid(
            "config.near-duplicate-threshold",
            format!("{t} is outside (0, 1]"),
        ));
    }
    if let Some(key) = &config.fence_key
        && crate::fence::FenceKey::new(key).is_none()
    {
        return Err(Error::invalid(
            "config.fence-key",
            format!(
                "a key of {} bytes is too short to keep the nonce secret: give at least {}",
                key.len(),
                crate::fence::FenceKey::MIN_LEN
            ),
        ));
    }
    let mut ranking = config.ranking;
    for (field, &mut value) in ranking.weights_mut() {
        if !value.is_finite() {
            return Err(Error::invalid(
                format!("config.ranking.{field}"),
                "must be a finite number",
            ));
        }
    }
    plan(&config.plan)
}

/// Checks a tokenizer given at `path`.
pub(crate) fn tokenizer(tokenizer: &Tokenizer, path: &str) -> Result<(), Error> {
    match tokenizer {
        Tokenizer::CharsPerToken(0) => Err(Error::invalid(
            format!("{path}.chars-per-token"),
            "must be at least 1",
        )),
        Tokenizer::Named(name) if name.trim().is_empty() => {
            Err(Error::invalid(format!("{path}.named"), "must not be empty"))
        }
        Tokenizer::Host(name) if name.trim().is_empty() => {
            Err(Error::invalid(format!("{path}.host"), "must not be empty"))
        }
        _ => Ok(()),
    }
}

/// Checks a plan.
pub(crate) fn plan(plan: &Plan) -> Result<(), Error> {
    if !(0.0..1.0).contains(&plan.safety_margin) {
        return Err(Error::invalid(
            "config.plan.safety-margin",
            format!("{} is outside [0, 1)", plan.safety_margin),
        ));
    }
    if plan.cut_step == 0 {
        return Err(Error::invalid("config.plan.cut-step", "must be at least 1"));
    }
    if !(0.0..=1.0).contains(&plan.cut_share) {
        return Err(Error::invalid(
            "config.plan.cut-share",
            format!("{} is outside [0, 1]", plan.cut_share),
        ));
    }
    if !(0.0..=1.0).contains(&plan.compact_share) {
        return Err(Error::invalid(
            "config.plan.compact-share",
            format!("{} is outside [0, 1]", plan.compact_share),
        ));
    }
    if plan.model_window == Some(0) {
        return Err(Error::invalid(
            "config.plan.model-window",
            "must be above 0",
        ));
    }
    let mut seen = Vec::new();
    let mut total = 0.0;
    for (i, s) in plan.shares.iter().enumerate() {
        let field = format!("config.plan.shares[{i}]");
        if !(0.0..=1.0).contains(&s.share) {
            return Err(Error::invalid(
                format!("{field}.share"),
                format!("{} is outside [0, 1]", s.share),
            ));
        }
        if seen.contains(&s.section) {
            return Err(Error::invalid(
                format!("{field}.section"),
                format!("{:?} has a share already", s.section),
            ));
        }
        seen.push(s.section);
        total += s.share;
    }
    if total > 1.0 + 1e-9 {
        return Err(Error::invalid(
            "config.plan.shares",
            format!("shares add up to {total}, above 1"),
        ));
    }
    match plan.window_limit() {
        Some(limit) if plan.default_budget > limit => Err(Error::invalid(
            "config.plan.default-budget",
            format!(
                "{} is above the model window less its safety margin ({limit})",
                plan.default_budget
            ),
        )),
        _ => Ok(()),
    }
}

/// Checks `request`, naming the first offending field.
pub fn request(request: &AssembleRequest) -> Result<(), Error> {
    if let Some(t) = &request.tokenizer {
        tokenizer(t, "request.tokenizer")?;
    }
    if request
        .model
        .as_deref()
        .is_some_and(|m| m.trim().is_empty())
    {
        return Err(Error::invalid(
            "request.model",
            "must not be empty (leave it out when the request names no model)",
        ));
    }
    if request.context.session_id.as_deref() == Some("") {
        return Err(Error::invalid(
            "request.context.session-id",
            "must not be empty (leave it out when there is no session)",
        ));
    }
    if let Some(w) = &request.workflow {
        if w.status.is_empty() {
            return Err(Error::invalid(
                "request.workflow.status",
                "must not be empty",
            ));
        }
        if w.stage_id.as_deref() == Some("") {
            return Err(Error::invalid(
                "request.workflow.stage-id",
                "must not be empty (leave it out when there is no stage)",
            ));
        }
    }
    if request.chat.is_some() && !request.conversation.is_empty() {
        return Err(Error::invalid(
            "request.chat",
            "a request carries its conversation as `conversation` or as `chat`, not both",
        ));
    }
    let mut calls: HashMap<&str, usize> = HashMap::new();
    for (i, turn) in request.conversation.iter().enumerate() {
        let field = || format!("request.conversation[{i}].tool-call-id");
        match (turn.role, turn.tool_call_id.as_deref()) {
            (_, Some("")) => return Err(Error::invalid(field(), "must not be empty")),
            (Role::Tool, None) => {
                return Err(Error::invalid(
                    field(),
                    "a tool turn must name the call it answers",
                ));
            }
            (Role::User | Role::System, Some(_)) => {
                return Err(Error::invalid(
                    field(),
                    "only assistant and tool turns carry a tool-call id",
                ));
            }
            (Role::Assistant, Some(id)) => {
                if let Some(j) = calls.insert(id, i) {
                    return Err(Error::invalid(
                        field(),
                        format!("call `{id}` is already made by conversation[{j}]"),
                    ));
                }
            }
            _ => {}
        }
    }
    for (i, s) in request.stage_summaries.iter().enumerate() {
        if s.stage_id.is_empty() {
            return Err(Error::invalid(
                format!("request.stage-summaries[{i}].stage-id"),
                "must not be empty",
            ));
        }
    }
    match (&request.compaction, &request.chat) {
        // A chat's compaction is checked against its turns, once read
        // (the pipeline validates the request the chat derives).
        (Some(c), None) => compaction(c, &request.conversation),
        _ => Ok(()),
    }
}

/// Checks a compaction passed back against the conversation it compacts.
fn compaction(
    c: &crate::types::Compaction,
    turns: &[crate::types::ConversationTurn],
) -> Result<(), Error> {
    let n = turns.len();
    for (field, at) in [("turns", c.turns), ("cleared", c.cleared)] {
        if at as usize > n {
            return Err(Error::invalid(
                format!("request.compaction.{field}"),
                format!("{at} is past the conversation's {n} turns"),
            ));
        }
    }
    if c.turns > 0 && c.summary.trim().is_empty() {
        return Err(Error::invalid(
            "request.compaction.summary",
            format!("must not be empty when it stands for {} turns", c.turns),
        ));
    }
    let at = c.turns as usize;
    if at > 0
        && !crate::conversation::units(turns)
            .iter()
            .any(|u| u.start == at)
        && at < n
    {
        return Err(Error::invalid(
            "request.compaction.turns",
            format!(
                "{at} splits a tool call from its result (conversation[{at}] is inside a call's run)"
            ),
        ));
    }
    let covered = crate::compact::covered(c);
    if crate::compact::covered_hash(&turns[..covered]) != c.hash {
        return Err(Error::invalid(
            "request.compaction.hash",
            format!(
                "the conversation's first {covered} turns are not the ones this compaction was made \
                 from: pass back the whole conversation its pack was made from, new turns after it"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{RULES, Rule, request};
    use crate::types::AssembleRequest;
    use serde_json::{Value, json};

    /// Each rule's field in a request: where it is, as the refusal names
    /// it, and the request holding `value` there.
    fn placed(record: &str, field: &str, value: Value) -> Option<(&'static str, Value)> {
        let base = |mut v: Value| {
            if v.get("tokenizer").is_none() && v.get("model").is_none() {
                v["tokenizer"] = json!("o200k-base");
            }
            v
        };
        Some(match (record, field) {
            ("assemble-request", "model") => ("request.model", base(json!({"model": value}))),
            ("agent-context", "session-id") => (
                "request.context.session-id",
                base(json!({"context": {"session-id": value}})),
            ),
            ("workflow-status", "status") => (
                "request.workflow.status",
                base(json!({"workflow": {"status": value}})),
            ),
            ("workflow-status", "stage-id") => (
                "request.workflow.stage-id",
                base(json!({"workflow": {"status": "running", "stage-id": value}})),
            ),
            ("conversation-turn", "tool-call-id") => (
                "request.conversation[0].tool-call-id",
                base(json!({"conversation": [
                    {"role": "assistant", "content": "", "tool-call-id": value}
                ]})),
            ),
            ("stage-summary", "stage-id") => (
                "request.stage-summaries[0].stage-id",
                base(json!({"stage-summaries": [
                    {"stage-id": value, "outcome": "succeeded", "summary": "s"}
                ]})),
            ),
            ("tokenizer", case) => (
                match case {
                    "named" => "request.tokenizer.named",
                    "host" => "request.tokenizer.host",
                    _ => "request.tokenizer.chars-per-token",
                },
                json!({"tokenizer": {case: value}}),
            ),
            _ => return None,
        })
    }

    #[test]
    fn every_rule_the_document_states_is_the_one_the_request_is_held_to() {
        for &(record, field, rule) in RULES {
            let (bad, good): (&[Value], Value) = match rule {
                Rule::NotEmpty => (&[json!("")], json!(" ")),
                Rule::NotBlank => (&[json!(""), json!(" \u{3000}\t")], json!(" a")),
                Rule::AtLeastOne => (&[json!(0)], json!(1)),
            };
            let (path, _) = placed(record, field, good.clone())
                .unwrap_or_else(|| panic!("{record}.{field} has no place in this test"));
            for value in bad {
                let Some((_, v)) = placed(record, field, value.clone()) else {
                    continue;
                };
                let r: AssembleRequest = serde_json::from_value(v).unwrap();
                let e = request(&r).expect_err(path).to_string();
                assert!(e.contains(path), "{record}.{field} = {value}: {e}");
            }
            let (_, v) = placed(record, field, good).unwrap();
            let r: AssembleRequest = serde_json::from_value(v).unwrap();
            assert!(request(&r).is_ok(), "{record}.{field}: {:?}", request(&r));
        }
    }
}
