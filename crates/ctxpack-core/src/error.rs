//! The one error type of the core, mirrored by `ctxpack-error` in the WIT.

use crate::snapshot::Snapshot;
use serde::{Deserialize, Serialize};

/// Why an assembly or a configuration was refused.
///
/// Messages are lowercase without trailing punctuation and name the field or
/// carry the numbers that explain the refusal.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
///
/// The cases mirror the WIT variant one to one and the adapters match them
/// exhaustively, so a new case cannot cross the boundary unmapped.
#[serde(rename_all = "kebab-case", rename_all_fields = "kebab-case")]
pub enum Error {
    /// A request or configuration field is invalid.
    #[error("invalid field `{field}`: {message}")]
    InvalidField {
        /// Path of the field, e.g. `request.conversation[3].tool-call-id`.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// L0 alone does not fit the budget; nothing was truncated.
    #[error("mandatory layer needs {mandatory_tokens} tokens but the budget is {budget}")]
    MandatoryOverBudget {
        /// Tokens L0 needs, entry overhead included: the true sum, which
        /// may pass any budget.
        mandatory_tokens: u64,
        /// The budget.
        budget: u32,
    },
    /// A tokenizer this build does not have (an encoding left out by its
    /// cargo features), named with the feature that would bring it.
    #[error("tokenizer unavailable: {0}")]
    TokenizerUnavailable(String),
    /// A host import failed where the assembly cannot go on without it.
    #[error("host import `{capability}` failed: {message}")]
    HostFailed {
        /// The import, e.g. `policy.review`.
        capability: String,
        /// What the host said.
        message: String,
    },
    /// A host driving an assembly step by step answered something it was
    /// not asked: another step, a call that does not exist, one answered
    /// already. Nothing changed; the host may answer again.
    #[error("step mismatch: {0}")]
    StepMismatch(String),
}

impl Error {
    /// An [`Error::InvalidField`] for `field`.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Error::InvalidField {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// A failure reported by a host import.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
#[error("host import `{capability}` failed: {message}")]
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
        Self::new(capability, "not provided by this host")
    }
}

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
