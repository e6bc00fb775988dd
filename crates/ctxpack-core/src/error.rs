//! The one error type of the core, mirrored by `ctxpack-error` in the WIT.

use crate::snapshot::Snapshot;
use serde::{Deserialize, Serialize};

/// Why an assembly or a configuration was refused.
///
/// Messages are lowercase without trailing punctuation and name the field or
/// carry the numbers that explain the refusal.
///
/// The cases mirror the WIT variant one to one and the adapters match them
/// exhaustively, so a new case cannot cross the boundary unmapped. Each
/// case is worded once, in [`Error::WORDING`], which every host package's
/// message is generated from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", rename_all_fields = "kebab-case")]
pub enum Error {
    /// A request or configuration field is invalid.
    InvalidField {
        /// Path of the field, e.g. `request.conversation[3].tool-call-id`.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// L0 alone does not fit the budget; nothing was truncated.
    MandatoryOverBudget {
        /// Tokens L0 needs, entry overhead included: the true sum, which
        /// may pass any budget.
        mandatory_tokens: u64,
        /// The budget.
        budget: u32,
    },
    /// A tokenizer this build does not have (an encoding left out by its
    /// cargo features), named with the feature that would bring it.
    TokenizerUnavailable(String),
    /// A host import failed where the assembly cannot go on without it.
    HostFailed {
        /// The import, e.g. `policy.review`.
        capability: String,
        /// What the host said.
        message: String,
    },
    /// A host driving an assembly step by step answered something it was
    /// not asked: another step, a call that does not exist, one answered
    /// already. Nothing changed; the host may answer again.
    StepMismatch(String),
}

impl Error {
    /// How each case reads, by its WIT name: `{name}` stands for the
    /// case's field of that (WIT) name, `{0}` for a case's one string.
    /// [`Error`]'s `Display` and every host package's messages (generated
    /// by `ctxpack-codegen`) read these.
    pub const WORDING: [(&'static str, &'static str); 5] = [
        ("invalid-field", "invalid field `{field}`: {message}"),
        (
            "mandatory-over-budget",
            "mandatory layer needs {mandatory-tokens} tokens but the budget is {budget}",
        ),
        ("tokenizer-unavailable", "tokenizer unavailable: {0}"),
        (
            "host-failed",
            "host import `{capability}` failed: {message}",
        ),
        ("step-mismatch", "step mismatch: {0}"),
    ];

    /// The case's WIT name and its fields by their WIT names.
    fn parts(&self) -> (&'static str, Vec<(&'static str, String)>) {
        match self {
            Error::InvalidField { field, message } => (
                "invalid-field",
                vec![("field", field.clone()), ("message", message.clone())],
            ),
            Error::MandatoryOverBudget {
                mandatory_tokens,
                budget,
            } => (
                "mandatory-over-budget",
                vec![
                    ("mandatory-tokens", mandatory_tokens.to_string()),
                    ("budget", budget.to_string()),
                ],
            ),
            Error::TokenizerUnavailable(s) => ("tokenizer-unavailable", vec![("0", s.clone())]),
            Error::HostFailed {
                capability,
                message,
            } => (
                "host-failed",
                vec![
                    ("capability", capability.clone()),
                    ("message", message.clone()),
                ],
            ),
            Error::StepMismatch(s) => ("step-mismatch", vec![("0", s.clone())]),
        }
    }

    /// An [`Error::InvalidField`] for `field`.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Error::InvalidField {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (case, fields) = self.parts();
        let template = Error::WORDING
            .iter()
            .find(|(c, _)| *c == case)
            .map_or(case, |(_, t)| *t);
        f.write_str(&fill(template, &fields))
    }
}

impl std::error::Error for Error {}

/// `template` with each `{name}` replaced by the value of `name` in
/// `fields` (in one pass: a value's own braces stay as they are).
fn fill(template: &str, fields: &[(&str, String)]) -> String {
    let mut out = String::with_capacity(template.len() + 32);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(crate::text::cut(rest, ..open));
        let after = crate::text::cut(rest, open + 1..);
        match after.find('}').and_then(|close| {
            let name = crate::text::cut(after, ..close);
            fields
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (close, v))
        }) {
            Some((close, value)) => {
                out.push_str(value);
                rest = crate::text::cut(after, close + 1..);
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The message a host writes for a capability it does not provide.
pub const NOT_PROVIDED: &str = "not provided by this host";

/// A failure reported by a host import. It reads as the
/// [`Error::HostFailed`] it becomes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct HostError {
    /// The import that failed.
    pub capability: String,
    /// What the host said.
    pub message: String,
}

impl HostError {
    /// A failure of `capability` (e.g. `sources.retrieve`) with `message`.
    pub fn new(capability: impl Into<String>, message: impl Into<String>) -> Self {
        HostError {
            capability: capability.into(),
            message: message.into(),
        }
    }

    /// The failure of a capability the host does not provide.
    pub fn not_provided(capability: impl Into<String>) -> Self {
        Self::new(capability, NOT_PROVIDED)
    }
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Error::from(self.clone()).fmt(f)
    }
}

impl std::error::Error for HostError {}

impl From<HostError> for Error {
    fn from(e: HostError) -> Self {
        Error::HostFailed {
            capability: e.capability,
            message: e.message,
        }
    }
}

/// An assembly that did not give a pack: why, and — when the assembly had
/// begun (L0 over the budget, the policy failing) — the `failed` snapshot
/// that records it, with every candidate known by then, for the host to
/// store. A request refused as invalid has no snapshot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Failure {
    /// Why.
    pub error: Error,
    /// The failed snapshot, if the assembly had begun.
    pub snapshot: Option<Box<Snapshot>>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Failure {
            error,
            snapshot: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_reads_as_its_wording_with_its_fields() {
        let cases = [
            Error::invalid("request.budget", "must be {at least} 1"),
            Error::MandatoryOverBudget {
                mandatory_tokens: 120,
                budget: 100,
            },
            Error::TokenizerUnavailable("cl100k-base".into()),
            HostError::not_provided("policy.review").into(),
            Error::StepMismatch("a call this step did not ask for".into()),
        ];
        let read: Vec<String> = cases.iter().map(ToString::to_string).collect();
        assert_eq!(
            read,
            [
                "invalid field `request.budget`: must be {at least} 1",
                "mandatory layer needs 120 tokens but the budget is 100",
                "tokenizer unavailable: cl100k-base",
                "host import `policy.review` failed: not provided by this host",
                "step mismatch: a call this step did not ask for",
            ]
        );
        // Every case has its wording, named as the WIT names it.
        for (case, e) in Error::WORDING.iter().zip(&cases) {
            assert_eq!(case.0, e.parts().0);
            let json = serde_json::to_value(e).unwrap();
            assert!(json.get(case.0).is_some(), "{json}");
        }
    }
}
