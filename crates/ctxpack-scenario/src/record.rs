//! A host that writes down every call it is lent and what it answered:
//! the scenario stores' answers as data, for the hosts in other languages
//! to replay (`cargo run -p ctxpack-conformance --bin generated` writes
//! them beside the scenarios).
//!
//! [`Recorder`] wraps any [`Host`]; each call is recorded as the JSON face
//! writes it ([`Call`], without the context, which is the request's) and
//! its answer as the JSON face reads it (`{"ok": …}` or `{"err": …}`). Its
//! `Host` methods are expanded from the WIT's imports
//! (`ctxpack_wit::wit_capabilities!`), so a new capability is recorded
//! without an edit here.

use ctxpack_core::{AgentContext, Call, Host, HostError};
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;

/// One call and its answer, as JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Recorded {
    /// The call as a step writes it: `{"retrieve": {"query": …, "limit": …}}`.
    pub call: Value,
    /// Its answer as a step reads it: `{"ok": …}` or `{"err": …}`.
    pub answer: Value,
}

/// `H`, with every call it answers recorded in order.
#[derive(Clone, Debug, Default)]
pub struct Recorder<H> {
    inner: H,
    recorded: Vec<Recorded>,
}

impl<H> Recorder<H> {
    /// Records the calls `inner` answers.
    pub fn new(inner: H) -> Self {
        Recorder {
            inner,
            recorded: Vec::new(),
        }
    }

    /// The host it records.
    pub fn inner(&self) -> &H {
        &self.inner
    }

    /// The host it records, to change what it answers next.
    pub fn inner_mut(&mut self) -> &mut H {
        &mut self.inner
    }

    /// Every call so far, in the order made, with its answer.
    pub fn recorded(&self) -> &[Recorded] {
        &self.recorded
    }

    /// Takes the calls recorded so far.
    pub fn take(&mut self) -> Vec<Recorded> {
        std::mem::take(&mut self.recorded)
    }

    fn push<T: Serialize>(&mut self, call: &Call<'_>, answer: &Result<T, HostError>) {
        #[derive(Serialize)]
        #[serde(rename_all = "kebab-case")]
        enum Json<'a, T> {
            Ok(&'a T),
            Err(&'a HostError),
        }
        let answer = match answer {
            Ok(v) => Json::Ok(v),
            Err(e) => Json::Err(e),
        };
        self.recorded.push(Recorded {
            call: json(call),
            answer: json(&answer),
        });
    }
}

/// `value` as JSON. The core's calls, candidates, verdicts and errors
/// have no map with keys that are not strings, so this cannot fail; were
/// it to, the recording says so where a replay compares it.
fn json<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or_else(|e| Value::String(format!("unrecordable: {e}")))
}

macro_rules! recorder_arms {
    ($( $interface:ident {
        $( $function:ident $Capability:ident [$($Request:ident)?] ($($context:ident)?)
            { $($param:ident : $kind:ident [$owned:ty] [$core:ty]),* } -> [$answer:ty] [$core_answer:ty]; )*
    } )*) => {
        impl<H: Host> Host for Recorder<H> {
            $($(
                fn $function(
                    &mut self,
                    $($context: &AgentContext,)?
                    $($param: $core),*
                ) -> Result<$core_answer, HostError> {
                    let call = Call::$Capability { $($param: recorder_arms!(@call $kind $param)),* };
                    let answer = self.inner.$function($($context,)? $($param),*);
                    self.push(&call, &answer);
                    answer
                }
            )*)*
        }
    };
    // A parameter as the core's `Call` holds it.
    (@call str $p:ident) => { Cow::Borrowed($p) };
    (@call strs $p:ident) => { Cow::Borrowed($p) };
    (@call copy $p:ident) => { $p };
    (@call candidates $p:ident) => { Cow::Owned($p.iter().map(|c| (*c).clone()).collect()) };
    (@call records $p:ident) => { Cow::Borrowed($p) };
    (@call value $p:ident) => { $p.clone() };
}

ctxpack_wit::wit_capabilities!(recorder_arms);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stores::{Answer, HostAnswers, InMemoryHost};
    use ctxpack_core::Candidate;

    #[test]
    fn a_call_and_its_answer_are_recorded_as_the_json_face_writes_them() {
        let item: Candidate = serde_json::from_value(serde_json::json!({
            "id": "a", "section": "relevant-knowledge", "text": "alpha", "trust": "trusted"
        }))
        .unwrap();
        let answers = HostAnswers {
            retrieve: Some(Answer::Items(vec![item.clone(), item])),
            ..HostAnswers::default()
        };
        let mut host = Recorder::new(InMemoryHost::new(answers));
        let context = AgentContext::default();
        let got = host.retrieve(&context, "q", 1).map(|v| v.len());
        assert_eq!(got, Ok(1));
        let err = host.repository_state(&context);
        assert!(err.is_err());
        let recorded = host.take();
        assert_eq!(recorded.len(), 2);
        assert_eq!(
            recorded[0].call,
            serde_json::json!({"retrieve": {"query": "q", "limit": 1}})
        );
        assert_eq!(recorded[0].answer["ok"][0]["id"], "a");
        assert_eq!(
            recorded[1].call,
            serde_json::json!({"repository-state": {}})
        );
        assert_eq!(
            recorded[1].answer,
            serde_json::json!({"err": {
                "capability": "sources.repository-state",
                "message": "not provided by this host"
            }})
        );
        assert!(host.recorded().is_empty());
        assert_eq!(host.inner().total_calls(), 2);
    }
}
