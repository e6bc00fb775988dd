//! In-memory stores: the host capabilities of a scenario file.
//!
//! [`InMemoryHost`] implements the core's [`Host`] trait, so the same stores
//! answer whether the core runs natively or inside the component (where the
//! wasmtime imports forward to it). It counts every call it receives.

use ctxpack_core::Capability;
use ctxpack_core::{AgentContext, Candidate, Host, HostError, SummaryRequest, Tokenizer, Verdict};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What one source answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum Answer {
    /// These candidates (the first `limit` of them where a limit applies).
    Items(Vec<Candidate>),
    /// All of these candidates, whatever the limit: a host that ignores it.
    AllItems(Vec<Candidate>),
    /// A failure with this message.
    Error(String),
}

/// What the policy engine decides.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct PolicyRules {
    /// Candidate id -> reason it is denied.
    #[serde(default)]
    pub deny: BTreeMap<String, String>,
    /// Candidate id -> the text it is redacted to.
    #[serde(default)]
    pub redact: BTreeMap<String, String>,
    /// When set, every review fails with this message.
    #[serde(default)]
    pub error: Option<String>,
    /// When set, a review answers this many verdicts, whatever it was
    /// asked: fewer drops the last, more adds allows (a broken policy
    /// engine).
    #[serde(default)]
    pub verdicts: Option<u32>,
}

/// What the summariser does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum SummarizerRule {
    /// Keep the leading words, about four characters per target token.
    LeadingWords,
    /// Fail with this message.
    Error(String),
    /// Answer one summary fewer than asked (a broken summariser).
    TooFew,
    /// Answer one summary more than asked (a broken summariser).
    TooMany,
    /// Answer this text for every request, whatever its target (empty,
    /// one token, far over the target).
    Text(String),
}

/// The host side of a scenario: what each import answers. An import left
/// out is not provided, and calling it fails.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct HostAnswers {
    /// `sources.retrieve`.
    #[serde(default)]
    pub retrieve: Option<Answer>,
    /// `sources.expand-graph`.
    #[serde(default)]
    pub expand_graph: Option<Answer>,
    /// `sources.recall-memory`.
    #[serde(default)]
    pub recall_memory: Option<Answer>,
    /// `sources.repository-state`.
    #[serde(default)]
    pub repository_state: Option<Answer>,
    /// `policy.review`.
    #[serde(default)]
    pub policy: Option<PolicyRules>,
    /// `summarizer.summarize`.
    #[serde(default)]
    pub summarizer: Option<SummarizerRule>,
    /// `counter.count-tokens`.
    #[serde(default)]
    pub counter: Option<CounterRule>,
}

/// How the host counts tokens (a request's `tokenizer: {"host": …}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum CounterRule {
    /// One token a word: a run of characters between ASCII spaces, tabs
    /// and line breaks (see [`words`]).
    Words,
    /// Fail with this message.
    Error(String),
    /// Answer one count fewer than asked (a broken counter).
    TooFew,
}

/// The scenario host's count: one token a run of characters between
/// ASCII spaces, tabs, line feeds and carriage returns — a rule every
/// host package's scenario host counts alike.
pub fn words(text: &str) -> u32 {
    let n = text
        .split([' ', '\t', '\n', '\r'])
        .filter(|w| !w.is_empty())
        .count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// In-memory stores answering from [`HostAnswers`], with call counts.
#[derive(Clone, Debug, Default)]
pub struct InMemoryHost {
    answers: HostAnswers,
    calls: BTreeMap<&'static str, u32>,
    /// An answer for the next retrieval, moved out instead of copied.
    handed: Option<Vec<Candidate>>,
}

impl InMemoryHost {
    /// Stores that answer as `answers` says.
    pub fn new(answers: HostAnswers) -> Self {
        InMemoryHost {
            answers,
            calls: BTreeMap::new(),
            handed: None,
        }
    }

    /// Makes the next retrieval answer `items`, moved to the builder
    /// rather than copied from the stored answer, as a host whose
    /// retriever builds a fresh answer for each call does. Benchmarks use
    /// it so that what they time is the assembly, not this host copying
    /// its store. The retrieval's limit still applies.
    pub fn hand_over_retrieval(&mut self, items: Vec<Candidate>) {
        self.handed = Some(items);
    }

    /// How many times each capability was called, by name.
    pub fn calls(&self) -> &BTreeMap<&'static str, u32> {
        &self.calls
    }

    /// Total calls to every capability.
    pub fn total_calls(&self) -> u32 {
        self.calls.values().sum()
    }

    fn source(
        &mut self,
        name: &'static str,
        pick: fn(&HostAnswers) -> &Option<Answer>,
        limit: Option<u32>,
    ) -> Result<Vec<Candidate>, HostError> {
        *self.calls.entry(name).or_default() += 1;
        match pick(&self.answers) {
            None => Err(HostError::not_provided(name)),
            Some(Answer::Error(message)) => Err(HostError::new(name, message.clone())),
            Some(Answer::Items(items)) => {
                let n = limit.map_or(items.len(), |l| items.len().min(l as usize));
                Ok(items[..n].to_vec())
            }
            Some(Answer::AllItems(items)) => Ok(items.clone()),
        }
    }
}

impl Host for InMemoryHost {
    fn retrieve(
        &mut self,
        _: &AgentContext,
        _: &str,
        limit: u32,
    ) -> Result<Vec<Candidate>, HostError> {
        match self.handed.take() {
            Some(mut items) => {
                *self.calls.entry(Capability::Retrieve.name()).or_default() += 1;
                items.truncate(limit as usize);
                Ok(items)
            }
            None => self.source(Capability::Retrieve.name(), |a| &a.retrieve, Some(limit)),
        }
    }

    fn expand_graph(
        &mut self,
        _: &AgentContext,
        _: &[String],
        _: u32,
    ) -> Result<Vec<Candidate>, HostError> {
        self.source(Capability::ExpandGraph.name(), |a| &a.expand_graph, None)
    }

    fn recall_memory(
        &mut self,
        _: &AgentContext,
        _: &str,
        _: &str,
        limit: u32,
    ) -> Result<Vec<Candidate>, HostError> {
        self.source(
            Capability::RecallMemory.name(),
            |a| &a.recall_memory,
            Some(limit),
        )
    }

    fn repository_state(&mut self, _: &AgentContext) -> Result<Vec<Candidate>, HostError> {
        self.source(
            Capability::RepositoryState.name(),
            |a| &a.repository_state,
            None,
        )
    }

    fn review(
        &mut self,
        _: &AgentContext,
        items: &[&Candidate],
    ) -> Result<Vec<Verdict>, HostError> {
        let name = Capability::Review.name();
        *self.calls.entry(name).or_default() += 1;
        let rules = self
            .answers
            .policy
            .as_ref()
            .ok_or_else(|| HostError::not_provided(name))?;
        if let Some(message) = &rules.error {
            return Err(HostError::new(name, message.clone()));
        }
        let answered = rules.verdicts.map_or(items.len(), |n| n as usize);
        let verdicts = items
            .iter()
            .map(|c| match (rules.deny.get(&c.id), rules.redact.get(&c.id)) {
                (Some(why), _) => Verdict::Deny(why.clone()),
                (None, Some(text)) => Verdict::Redact(text.clone()),
                (None, None) => Verdict::Allow,
            })
            .chain(std::iter::repeat(Verdict::Allow));
        Ok(verdicts.take(answered).collect())
    }

    fn count_tokens(&mut self, _: &str, texts: &[String]) -> Result<Vec<u32>, HostError> {
        let name = Capability::CountTokens.name();
        *self.calls.entry(name).or_default() += 1;
        match &self.answers.counter {
            None => Err(HostError::not_provided(name)),
            Some(CounterRule::Error(message)) => Err(HostError::new(name, message.clone())),
            Some(CounterRule::Words) => Ok(texts.iter().map(|t| words(t)).collect()),
            Some(CounterRule::TooFew) => Ok(texts.iter().skip(1).map(|t| words(t)).collect()),
        }
    }

    fn summarize(
        &mut self,
        requests: &[SummaryRequest],
        _: Tokenizer,
    ) -> Result<Vec<String>, HostError> {
        let name = Capability::Summarize.name();
        *self.calls.entry(name).or_default() += 1;
        match &self.answers.summarizer {
            None => Err(HostError::not_provided(name)),
            Some(SummarizerRule::Error(message)) => Err(HostError::new(name, message.clone())),
            Some(SummarizerRule::LeadingWords) => {
                Ok(requests.iter().map(leading_summary).collect())
            }
            Some(SummarizerRule::TooFew) => {
                Ok(requests.iter().skip(1).map(leading_summary).collect())
            }
            Some(SummarizerRule::TooMany) => Ok(requests
                .iter()
                .map(leading_summary)
                .chain(std::iter::once("one too many".to_owned()))
                .collect()),
            Some(SummarizerRule::Text(text)) => Ok(vec![text.clone(); requests.len()]),
        }
    }
}

/// The scenario host's summary of `request`: its text's leading words
/// within four characters a token of its target (at most its target
/// tokens in any encoding the scenarios use). The service's fixture store
/// summarises with it too.
pub fn leading_summary(request: &SummaryRequest) -> String {
    leading_words(&request.text, request.target_tokens as usize * 4)
}

/// The leading words of `text` that fit in `max_chars` characters.
fn leading_words(text: &str, max_chars: usize) -> String {
    let mut out = String::new();
    for word in text.split_whitespace() {
        if out.len() + word.len() + 1 > max_chars {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str) -> Candidate {
        serde_json::from_value(serde_json::json!({
            "id": id, "section": "relevant-knowledge", "text": id, "trust": "trusted"
        }))
        .unwrap()
    }

    #[test]
    fn sources_answer_limit_fail_and_count() {
        let mut host = InMemoryHost::new(HostAnswers {
            retrieve: Some(Answer::Items(vec![item("a"), item("b"), item("c")])),
            repository_state: Some(Answer::Error("index degraded".into())),
            ..HostAnswers::default()
        });
        let ctx = AgentContext::default();
        assert_eq!(host.retrieve(&ctx, "q", 2).unwrap().len(), 2);
        let e = host.repository_state(&ctx).unwrap_err();
        assert_eq!(e.message, "index degraded");
        let e = host.expand_graph(&ctx, &[], 1).unwrap_err();
        assert_eq!(e.capability, "sources.expand-graph");
        assert_eq!(host.total_calls(), 3);
        assert_eq!(host.calls()["sources.retrieve"], 1);
    }

    #[test]
    fn a_handed_over_answer_is_given_once_within_the_limit() {
        let mut host = InMemoryHost::new(HostAnswers {
            retrieve: Some(Answer::Items(vec![item("stored")])),
            ..HostAnswers::default()
        });
        host.hand_over_retrieval(vec![item("a"), item("b"), item("c")]);
        let ctx = AgentContext::default();
        let ids = |items: Vec<Candidate>| items.into_iter().map(|c| c.id).collect::<Vec<_>>();
        assert_eq!(ids(host.retrieve(&ctx, "q", 2).unwrap()), ["a", "b"]);
        assert_eq!(ids(host.retrieve(&ctx, "q", 2).unwrap()), ["stored"]);
        assert_eq!(host.calls()["sources.retrieve"], 2);
    }

    #[test]
    fn policy_denies_redacts_and_allows_by_id() {
        let mut rules = PolicyRules::default();
        rules.deny.insert("a".into(), "secret".into());
        rules.redact.insert("b".into(), "[redacted]".into());
        let mut host = InMemoryHost::new(HostAnswers {
            policy: Some(rules),
            ..HostAnswers::default()
        });
        let v = host
            .review(
                &AgentContext::default(),
                &[&item("a"), &item("b"), &item("c")],
            )
            .unwrap();
        assert_eq!(
            v,
            vec![
                Verdict::Deny("secret".into()),
                Verdict::Redact("[redacted]".into()),
                Verdict::Allow
            ]
        );
    }

    #[test]
    fn leading_words_summary_stays_within_its_character_allowance() {
        let mut host = InMemoryHost::new(HostAnswers {
            summarizer: Some(SummarizerRule::LeadingWords),
            ..HostAnswers::default()
        });
        let request = |text: &str, target_tokens| SummaryRequest {
            section: ctxpack_core::Section::RelevantKnowledge,
            text: text.into(),
            target_tokens,
        };
        let s = host
            .summarize(
                &[
                    request("one two three four five six", 4),
                    request("alpha beta", 1),
                ],
                Tokenizer::O200kBase,
            )
            .unwrap();
        assert_eq!(s, vec!["one two three".to_owned(), String::new()]);
    }
}
