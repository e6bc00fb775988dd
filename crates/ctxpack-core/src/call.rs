//! The calls an assembly makes on its host, and the host's answers: one
//! vocabulary for every driver.
//!
//! A [`Call`] is one of the host's functions (the WIT's imports) with its
//! arguments but the context, which is the request's. An [`Answer`] is
//! that function's result, keyed by the same name. [`Call::call`] makes a
//! call on a [`Host`]; an [`crate::Assembly`] asks for rounds of calls and
//! takes one answer per call; the JSON face writes the calls as they are
//! and reads the answers as `{"ok": …}` or `{"err": …}` (see
//! [`crate::json`]). A capability is added here, once, and every driver
//! that dispatches through these types has it.

use crate::capability::Capability;
use crate::error::HostError;
use crate::host::{Host, Verdict};
use crate::types::{AgentContext, Candidate, SummaryRequest, Tokenizer};
use serde::de::{DeserializeSeed, IgnoredAny, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::fmt;

/// One call of a step: the import it stands for, with that import's
/// arguments but the context (the request's). As JSON it is keyed by the
/// import's name, its arguments named as the import's parameters:
/// `{"retrieve": {"query": …, "limit": …}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    rename_all = "kebab-case",
    rename_all_fields = "kebab-case",
    deny_unknown_fields
)]
pub enum Call<'a> {
    /// `sources.retrieve`: candidates for `query`, at most `limit`.
    Retrieve {
        /// The query.
        query: Cow<'a, str>,
        /// The most candidates wanted.
        limit: u32,
    },
    /// `sources.expand-graph`: candidates at most `depth` hops from the
    /// given items.
    ExpandGraph {
        /// The items to expand from, best first.
        item_ids: Cow<'a, [String]>,
        /// The most hops.
        depth: u32,
    },
    /// `sources.recall-memory`: one user's long-term memory.
    RecallMemory {
        /// The user.
        user_id: Cow<'a, str>,
        /// The query.
        query: Cow<'a, str>,
        /// The most candidates wanted.
        limit: u32,
    },
    /// `sources.repository-state`: the state of the attempt's repository.
    RepositoryState {},
    /// `policy.review`: one verdict per item, in order.
    Review {
        /// The batch, in rank order, each text as it would be rendered
        /// inside its citation frame.
        items: Cow<'a, [Candidate]>,
    },
    /// `summarizer.summarize`: one summary per request, in order.
    Summarize {
        /// One text per section, each to summarise within its target.
        requests: Cow<'a, [SummaryRequest]>,
        /// The tokenizer the targets are counted in.
        tokenizer: Tokenizer,
    },
    /// `counter.count-tokens`: one count per text, in order.
    CountTokens {
        /// The name the request's `Tokenizer::Host` gives.
        tokenizer: Cow<'a, str>,
        /// The texts to count.
        texts: Cow<'a, [String]>,
    },
    /// `counter.count-messages`: one count per list of a trim's messages,
    /// in order.
    CountMessages {
        /// The name the trim's `Tokenizer::Host` gives.
        tokenizer: Cow<'a, str>,
        /// The lists to count, each as one request.
        lists: Cow<'a, [crate::types::MessageList]>,
    },
    /// `counter.split-text`: each text's pieces, in order.
    SplitText {
        /// The texts to split.
        texts: Cow<'a, [String]>,
    },
}

/// The host's answer to one [`Call`]: what the import returns, or its
/// failure, named by what it holds (every source answers candidates).
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// To a source call: [`Call::Retrieve`], [`Call::ExpandGraph`],
    /// [`Call::RecallMemory`], [`Call::RepositoryState`].
    Candidates(Result<Vec<Candidate>, HostError>),
    /// To [`Call::Review`]: one verdict per item, in order.
    Verdicts(Result<Vec<Verdict>, HostError>),
    /// To [`Call::Summarize`]: one summary per request, in order.
    Summaries(Result<Vec<String>, HostError>),
    /// To [`Call::CountTokens`] and [`Call::CountMessages`]: one count
    /// per text or list, in order.
    Counts(Result<Vec<u32>, HostError>),
    /// To [`Call::SplitText`]: one list of pieces per text, in order.
    Splits(Result<Vec<crate::types::TextPieces>, HostError>),
}

impl Call<'_> {
    /// The import it stands for.
    pub fn import(&self) -> Capability {
        match self {
            Call::Retrieve { .. } => Capability::Retrieve,
            Call::ExpandGraph { .. } => Capability::ExpandGraph,
            Call::RecallMemory { .. } => Capability::RecallMemory,
            Call::RepositoryState {} => Capability::RepositoryState,
            Call::Review { .. } => Capability::Review,
            Call::Summarize { .. } => Capability::Summarize,
            Call::CountTokens { .. } => Capability::CountTokens,
            Call::CountMessages { .. } => Capability::CountMessages,
            Call::SplitText { .. } => Capability::SplitText,
        }
    }

    /// The capability it calls, as the WIT names it (`sources.retrieve`).
    pub fn capability(&self) -> &'static str {
        self.import().name()
    }

    /// Makes the call on `host`, for `context`'s request.
    pub fn call(&self, host: &mut dyn Host, context: &AgentContext) -> Answer {
        match self {
            Call::Retrieve { query, limit } => {
                Answer::Candidates(host.retrieve(context, query, *limit))
            }
            Call::ExpandGraph { item_ids, depth } => {
                Answer::Candidates(host.expand_graph(context, item_ids, *depth))
            }
            Call::RecallMemory {
                user_id,
                query,
                limit,
            } => Answer::Candidates(host.recall_memory(context, user_id, query, *limit)),
            Call::RepositoryState {} => Answer::Candidates(host.repository_state(context)),
            Call::Review { items } => {
                let items: Vec<&Candidate> = items.iter().collect();
                Answer::Verdicts(host.review(context, &items))
            }
            Call::Summarize {
                requests,
                tokenizer,
            } => Answer::Summaries(host.summarize(requests, tokenizer.clone())),
            Call::CountTokens { tokenizer, texts } => {
                Answer::Counts(host.count_tokens(tokenizer, texts))
            }
            Call::CountMessages { tokenizer, lists } => {
                Answer::Counts(host.count_messages(tokenizer, lists))
            }
            Call::SplitText { texts } => Answer::Splits(host.split_text(texts)),
        }
    }

    /// The answer that says this call failed with `error`.
    pub fn failed(&self, error: HostError) -> Answer {
        match self.answers() {
            Kind::Candidates => Answer::Candidates(Err(error)),
            Kind::Verdicts => Answer::Verdicts(Err(error)),
            Kind::Summaries => Answer::Summaries(Err(error)),
            Kind::Counts => Answer::Counts(Err(error)),
            Kind::Splits => Answer::Splits(Err(error)),
        }
    }

    /// What its answer holds.
    fn answers(&self) -> Kind {
        match self {
            Call::Retrieve { .. }
            | Call::ExpandGraph { .. }
            | Call::RecallMemory { .. }
            | Call::RepositoryState {} => Kind::Candidates,
            Call::Review { .. } => Kind::Verdicts,
            Call::Summarize { .. } => Kind::Summaries,
            Call::CountTokens { .. } | Call::CountMessages { .. } => Kind::Counts,
            Call::SplitText { .. } => Kind::Splits,
        }
    }

    /// Whether `answer` is of the kind this call is answered with.
    pub(crate) fn answered_by(&self, answer: &Answer) -> bool {
        self.answers() == answer.kind()
    }

    /// The call, owning what it borrowed.
    pub fn into_owned(self) -> Call<'static> {
        fn own<T: ToOwned + ?Sized>(c: Cow<'_, T>) -> Cow<'static, T> {
            Cow::Owned(c.into_owned())
        }
        match self {
            Call::Retrieve { query, limit } => Call::Retrieve {
                query: own(query),
                limit,
            },
            Call::ExpandGraph { item_ids, depth } => Call::ExpandGraph {
                item_ids: own(item_ids),
                depth,
            },
            Call::RecallMemory {
                user_id,
                query,
                limit,
            } => Call::RecallMemory {
                user_id: own(user_id),
                query: own(query),
                limit,
            },
            Call::RepositoryState {} => Call::RepositoryState {},
            Call::Review { items } => Call::Review { items: own(items) },
            Call::Summarize {
                requests,
                tokenizer,
            } => Call::Summarize {
                requests: own(requests),
                tokenizer,
            },
            Call::CountTokens { tokenizer, texts } => Call::CountTokens {
                tokenizer: own(tokenizer),
                texts: own(texts),
            },
            Call::CountMessages { tokenizer, lists } => Call::CountMessages {
                tokenizer: own(tokenizer),
                lists: own(lists),
            },
            Call::SplitText { texts } => Call::SplitText { texts: own(texts) },
        }
    }

    /// Reads this call's answer as JSON (`{"ok": …}` or `{"err": …}`).
    fn read<'de, D: Deserializer<'de>>(&self, de: D) -> Result<Answer, D::Error> {
        fn result<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
            de: D,
        ) -> Result<Result<T, HostError>, D::Error> {
            Ok(match JsonResult::<T>::deserialize(de)? {
                JsonResult::Ok(v) => Ok(v),
                JsonResult::Err(e) => Err(e),
            })
        }
        Ok(match self.answers() {
            Kind::Candidates => Answer::Candidates(result(de)?),
            Kind::Verdicts => Answer::Verdicts(result(de)?),
            Kind::Summaries => Answer::Summaries(result(de)?),
            Kind::Counts => Answer::Counts(result(de)?),
            Kind::Splits => Answer::Splits(result(de)?),
        })
    }
}

/// What an answer holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Candidates,
    Verdicts,
    Summaries,
    Counts,
    Splits,
}

impl Answer {
    fn kind(&self) -> Kind {
        match self {
            Answer::Candidates(_) => Kind::Candidates,
            Answer::Verdicts(_) => Kind::Verdicts,
            Answer::Summaries(_) => Kind::Summaries,
            Answer::Counts(_) => Kind::Counts,
            Answer::Splits(_) => Kind::Splits,
        }
    }

    /// What it holds, as the WIT's `answer` names it (`candidates`).
    pub fn name(&self) -> &'static str {
        match self {
            Answer::Candidates(_) => "candidates",
            Answer::Verdicts(_) => "verdicts",
            Answer::Summaries(_) => "summaries",
            Answer::Counts(_) => "counts",
            Answer::Splits(_) => "splits",
        }
    }
}

/// As JSON, an answer is its result: `{"ok": …}` or `{"err": …}`.
impl Serialize for Answer {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        fn result<S: Serializer, T: Serialize>(
            s: S,
            r: &Result<T, HostError>,
        ) -> Result<S::Ok, S::Error> {
            match r {
                Ok(v) => s.serialize_newtype_variant("answer", 0, "ok", v),
                Err(e) => s.serialize_newtype_variant("answer", 1, "err", e),
            }
        }
        match self {
            Answer::Candidates(r) => result(s, r),
            Answer::Verdicts(r) => result(s, r),
            Answer::Summaries(r) => result(s, r),
            Answer::Counts(r) => result(s, r),
            Answer::Splits(r) => result(s, r),
        }
    }
}

/// One result as JSON.
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
enum JsonResult<T> {
    Ok(T),
    Err(HostError),
}

/// Reads a step's answers as JSON, one per call of `calls`, in order.
/// Gives the answers read (fewer than the calls if the list is short) and
/// how many the list held.
pub(crate) struct Answers<'c>(pub &'c [Call<'static>]);

impl<'de> DeserializeSeed<'de> for Answers<'_> {
    type Value = (Vec<Answer>, usize);

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Answers<'_> {
    type Value = (Vec<Answer>, usize);

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a list of {} answers", self.0.len())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut answers = Vec::with_capacity(self.0.len());
        for call in self.0 {
            match seq.next_element_seed(Read(call))? {
                Some(answer) => answers.push(answer),
                None => {
                    let held = answers.len();
                    return Ok((answers, held));
                }
            }
        }
        let mut held = answers.len();
        while seq.next_element::<IgnoredAny>()?.is_some() {
            held += 1;
        }
        Ok((answers, held))
    }
}

/// Reads the answer to one call.
pub(crate) struct Read<'c>(pub &'c Call<'static>);

impl<'de> DeserializeSeed<'de> for Read<'_> {
    type Value = Answer;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Answer, D::Error> {
        self.0.read(de)
    }
}
