//! The resumable assembly: the step protocol.
//!
//! An [`Assembly`] is one assembly in progress. It says what it needs next
//! from its host — one round of source calls, a policy review batch, the
//! summaries of the sections it compresses — takes the host's answers (or
//! failures) and finally yields the pack. A host whose stores are
//! asynchronous (a browser's `fetch`, a Node database client, a model call
//! for a summary) awaits them between steps; nothing is called back.
//!
//! See [`Assembly`] for a host's loop.
//!
//! [`Builder::assemble`](crate::Builder::assemble) is this loop over a
//! [`Host`]: there is one pipeline, driven either way.
//!
//! The order of needs is fixed by the pipeline: at most two rounds of
//! source calls (expanding the graph needs what retrieval answered), then
//! review rounds while the budget is filled (see [`crate::budget`]), at
//! most one summaries step, and review rounds again if the room a summary
//! left over reaches candidates not yet reviewed. An answer to a step not
//! asked, or for a call that does not exist or was answered already, is an
//! [`Error::StepMismatch`] and changes nothing: the host can answer again.
//!
//! Inside, the pipeline is an `async` function whose only await points are
//! the host's answers; [`Assembly::next`] polls it once, with a waker that
//! does nothing, until it either finishes or asks.

use crate::error::{Error, Failure, HostError};
use crate::host::{Host, Verdict};
use crate::pack::ContextPack;
use crate::types::{AgentContext, Candidate, SummaryRequest, Tokenizer};
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// One call to one of the host's sources. As JSON it is spelled as the
/// WIT's `source-request`: `{"retrieve": {"query": …, "limit": …}}`, …,
/// `"repository-state"`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case", rename_all_fields = "kebab-case")]
pub enum SourceRequest {
    /// `sources.retrieve`: candidates for `query`, at most `limit`.
    Retrieve {
        /// The query.
        query: String,
        /// The most candidates wanted.
        limit: u32,
    },
    /// `sources.expand-graph`: candidates at most `depth` hops from the
    /// given items.
    ExpandGraph {
        /// The items to expand from, best first.
        item_ids: Vec<String>,
        /// The most hops.
        depth: u32,
    },
    /// `sources.recall-memory`: one user's long-term memory.
    RecallMemory {
        /// The user.
        user_id: String,
        /// The query.
        query: String,
        /// The most candidates wanted.
        limit: u32,
    },
    /// `sources.repository-state`: the state of the attempt's repository.
    RepositoryState,
}

impl SourceRequest {
    /// The capability it calls, as the WIT names it (`sources.retrieve`).
    pub fn capability(&self) -> &'static str {
        match self {
            SourceRequest::Retrieve { .. } => "sources.retrieve",
            SourceRequest::ExpandGraph { .. } => "sources.expand-graph",
            SourceRequest::RecallMemory { .. } => "sources.recall-memory",
            SourceRequest::RepositoryState => "sources.repository-state",
        }
    }

    /// Makes the call on `host`.
    pub fn call(
        &self,
        host: &mut dyn Host,
        context: &AgentContext,
    ) -> Result<Vec<Candidate>, HostError> {
        match self {
            SourceRequest::Retrieve { query, limit } => host.retrieve(context, query, *limit),
            SourceRequest::ExpandGraph { item_ids, depth } => {
                host.expand_graph(context, item_ids, *depth)
            }
            SourceRequest::RecallMemory {
                user_id,
                query,
                limit,
            } => host.recall_memory(context, user_id, query, *limit),
            SourceRequest::RepositoryState => host.repository_state(context),
        }
    }
}

/// What an assembly needs next, or its outcome.
// The outcome is large, and given once: boxing it would save nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Next<'a> {
    /// A round of source calls, independent of each other: answer each
    /// with [`Assembly::provide_source`], by its index, in any order.
    Sources(&'a [SourceRequest]),
    /// A review batch: answer with [`Assembly::provide_review`], one
    /// verdict per item, in order. Each text is as it would be rendered
    /// inside its citation frame.
    Review(&'a [Candidate]),
    /// The sections to compress: answer with
    /// [`Assembly::provide_summaries`], one summary per request, in order.
    Summaries {
        /// What to summarise, each within its target tokens.
        requests: &'a [SummaryRequest],
        /// The tokenizer the targets are counted in.
        tokenizer: Tokenizer,
    },
    /// The assembly is over: its pack, or why there is none (with the
    /// failed snapshot once it had begun). Given once; asked again, it is
    /// an [`Error::StepMismatch`].
    Done(Result<ContextPack, Failure>),
}

/// What the pipeline asked, kept by the assembly until it is answered.
enum Asked {
    Sources {
        calls: Vec<SourceRequest>,
        answers: Vec<Option<Result<Vec<Candidate>, HostError>>>,
    },
    Review(Vec<Candidate>),
    Summaries(Vec<SummaryRequest>, Tokenizer),
}

impl Asked {
    fn name(&self) -> &'static str {
        match self {
            Asked::Sources { .. } => "sources",
            Asked::Review(_) => "review",
            Asked::Summaries(..) => "summaries",
        }
    }
}

/// The host's answer, handed to the pipeline when it resumes.
pub(crate) enum Answer {
    Sources(Vec<Result<Vec<Candidate>, HostError>>),
    /// The reviewed candidates come back with the verdicts: their texts
    /// were lent to the host, not copied.
    Review(Vec<Candidate>, Result<Vec<Verdict>, HostError>),
    Summaries(Result<Vec<String>, HostError>),
}

/// Between the pipeline and its driver: what was asked, what was answered.
#[derive(Default)]
pub(crate) struct Channel {
    asked: RefCell<Option<Asked>>,
    answer: RefCell<Option<Answer>>,
}

impl Channel {
    /// Asks the host for the answers to one round of source calls.
    pub(crate) async fn sources(
        &self,
        calls: Vec<SourceRequest>,
    ) -> Vec<Result<Vec<Candidate>, HostError>> {
        let answers = calls.iter().map(|_| None).collect();
        match self.ask(Asked::Sources { calls, answers }).await {
            Answer::Sources(answers) => answers,
            _ => unreachable_answer(),
        }
    }

    /// Asks the policy to review `items`; they come back with the verdicts.
    pub(crate) async fn review(
        &self,
        items: Vec<Candidate>,
    ) -> (Vec<Candidate>, Result<Vec<Verdict>, HostError>) {
        match self.ask(Asked::Review(items)).await {
            Answer::Review(items, verdicts) => (items, verdicts),
            _ => unreachable_answer(),
        }
    }

    /// Asks the summariser for one summary per request.
    pub(crate) async fn summaries(
        &self,
        requests: Vec<SummaryRequest>,
        tokenizer: Tokenizer,
    ) -> Result<Vec<String>, HostError> {
        match self.ask(Asked::Summaries(requests, tokenizer)).await {
            Answer::Summaries(answer) => answer,
            _ => unreachable_answer(),
        }
    }

    fn ask(&self, asked: Asked) -> Ask<'_> {
        Ask {
            channel: self,
            asked: Some(asked),
        }
    }
}

/// The answer's kind always matches the question's: [`Assembly`] checks
/// it before handing an answer over, so a mismatch is a bug here, found by
/// every test that drives a step.
#[allow(clippy::panic)]
fn unreachable_answer() -> ! {
    panic!("an assembly was answered a step it did not ask")
}

/// A question to the host, pending until the driver has answered it.
struct Ask<'c> {
    channel: &'c Channel,
    asked: Option<Asked>,
}

impl Future for Ask<'_> {
    type Output = Answer;

    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Answer> {
        if let Some(asked) = self.asked.take() {
            *self.channel.asked.borrow_mut() = Some(asked);
            return Poll::Pending;
        }
        match self.channel.answer.borrow_mut().take() {
            Some(answer) => Poll::Ready(answer),
            None => Poll::Pending,
        }
    }
}

type Run<'a> = Pin<Box<dyn Future<Output = Result<ContextPack, Failure>> + 'a>>;

/// One assembly in progress, driven step by step by its host. It borrows
/// its builder and request; an assembly dropped before it is done leaves
/// nothing behind.
///
/// A host awaits its own stores between the steps (here they answer at
/// once; an async host would `.await` each answer, and may answer a
/// round's calls in any order):
///
/// ```
/// use ctxpack_core::{AssembleRequest, Builder, BuilderConfig, Candidate, Next, Verdict};
///
/// let config: BuilderConfig =
///     serde_json::from_str(r#"{"profile": {"rag": {"retrieve-limit": 8}}}"#).unwrap();
/// let request: AssembleRequest = serde_json::from_str(r#"{
///     "context": {"session-id": "s1", "trace-id": "t1"},
///     "query": "how do refunds work?", "tokenizer": "o200k-base", "budget": 200,
///     "entry-overhead": 0, "system-prompt": "Answer from the sources.",
///     "conversation": [], "keep-last": 8
/// }"#).unwrap();
/// let retrieved: Vec<Candidate> = serde_json::from_str(r#"[{
///     "id": "kb-1", "section": "relevant-knowledge", "trust": "trusted",
///     "text": "Refunds take five days.",
///     "provenance": {"source-kind": "kb", "reference": "kb/refunds"}
/// }]"#).unwrap();
///
/// let builder = Builder::new(config).unwrap();
/// let mut assembly = builder.start(&request);
/// let pack = loop {
///     match assembly.next() {
///         Next::Sources(calls) => {
///             let answers: Vec<_> = calls
///                 .iter()
///                 .map(|call| match call.capability() {
///                     "sources.retrieve" => Ok(retrieved.clone()),
///                     other => Err(ctxpack_core::HostError::not_provided(other)),
///                 })
///                 .collect();
///             for (k, answer) in answers.into_iter().enumerate().rev() {
///                 assembly.provide_source(k, answer).unwrap();
///             }
///         }
///         Next::Review(items) => {
///             let verdicts = vec![Verdict::Allow; items.len()];
///             assembly.provide_review(Ok(verdicts)).unwrap();
///         }
///         Next::Summaries { requests, .. } => {
///             let summaries = requests.iter().map(|r| r.text.clone()).collect();
///             assembly.provide_summaries(Ok(summaries)).unwrap();
///         }
///         Next::Done(outcome) => break outcome.unwrap(),
///     }
/// };
/// assert!(pack.entries.iter().any(|e| e.id == "kb-1"));
/// // Asked for what it did not ask, an assembly says so, typed.
/// assert!(assembly.provide_review(Ok(vec![])).is_err());
/// ```
pub struct Assembly<'a> {
    channel: Rc<Channel>,
    run: Option<Run<'a>>,
    /// What the pipeline asked and the host has not yet answered in full.
    asked: Option<Asked>,
    /// The outcome, until it is given out.
    done: Option<Result<ContextPack, Failure>>,
}

impl<'a> Assembly<'a> {
    /// An assembly of the pipeline `run` makes from its channel.
    pub(crate) fn new<F>(run: impl FnOnce(Rc<Channel>) -> F) -> Self
    where
        F: Future<Output = Result<ContextPack, Failure>> + 'a,
    {
        let channel = Rc::new(Channel::default());
        Assembly {
            run: Some(Box::pin(run(Rc::clone(&channel)))),
            channel,
            asked: None,
            done: None,
        }
    }

    /// What the assembly needs next, or its outcome. Asking again before
    /// answering gives the same need.
    // Not an iterator: each need must be answered before the next.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Next<'_> {
        if self.asked.is_none() && self.done.is_none() {
            self.resume();
        }
        match &self.asked {
            Some(Asked::Sources { calls, .. }) => return Next::Sources(calls),
            Some(Asked::Review(items)) => return Next::Review(items),
            Some(Asked::Summaries(requests, tokenizer)) => {
                return Next::Summaries {
                    requests,
                    tokenizer: *tokenizer,
                };
            }
            None => {}
        }
        Next::Done(self.done.take().unwrap_or_else(|| {
            Err(Error::StepMismatch("the assembly is over and its outcome was given".into()).into())
        }))
    }

    /// Runs the pipeline until it asks or finishes.
    fn resume(&mut self) {
        let Some(run) = self.run.as_mut() else {
            return;
        };
        match run.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(outcome) => {
                self.run = None;
                self.done = Some(outcome);
            }
            Poll::Pending => match self.channel.asked.borrow_mut().take() {
                Some(asked) => self.asked = Some(asked),
                // The pipeline awaits nothing but its host's answers.
                None => {
                    self.run = None;
                    self.done = Some(Err(Error::StepMismatch(
                        "the assembly stopped without asking anything".into(),
                    )
                    .into()));
                }
            },
        }
    }

    /// The answer to source call `call` of the round asked (its index in
    /// [`Next::Sources`]): its candidates, or its failure (the assembly
    /// goes on, degraded). Once every call of the round is answered, the
    /// assembly goes on at the next [`Assembly::next`].
    pub fn provide_source(
        &mut self,
        call: usize,
        answer: Result<Vec<Candidate>, HostError>,
    ) -> Result<(), Error> {
        let Some(Asked::Sources { calls, answers }) = &mut self.asked else {
            return Err(self.mismatch("sources"));
        };
        let Some(slot) = answers.get_mut(call) else {
            return Err(Error::StepMismatch(format!(
                "source call {call} does not exist: the round has {} calls",
                calls.len()
            )));
        };
        if slot.is_some() {
            return Err(Error::StepMismatch(format!(
                "source call {call} (`{}`) was answered already",
                calls[call].capability()
            )));
        }
        *slot = Some(answer);
        if answers.iter().all(Option::is_some) {
            let answers = answers.drain(..).flatten().collect();
            self.answer(Answer::Sources(answers));
        }
        Ok(())
    }

    /// The policy's verdicts on the review batch asked, one per item in
    /// order, or its failure. A failure, or a different number of
    /// verdicts, fails the assembly: nothing unreviewed is ever included.
    pub fn provide_review(&mut self, answer: Result<Vec<Verdict>, HostError>) -> Result<(), Error> {
        match self.asked.take() {
            Some(Asked::Review(items)) => {
                self.answer(Answer::Review(items, answer));
                Ok(())
            }
            other => {
                self.asked = other;
                Err(self.mismatch("review"))
            }
        }
    }

    /// The summaries asked, one per request in order, or the summariser's
    /// failure. A failure, a different number of summaries or an empty
    /// one makes the builder cut the section instead.
    pub fn provide_summaries(
        &mut self,
        answer: Result<Vec<String>, HostError>,
    ) -> Result<(), Error> {
        match self.asked.take() {
            Some(Asked::Summaries(..)) => {
                self.answer(Answer::Summaries(answer));
                Ok(())
            }
            other => {
                self.asked = other;
                Err(self.mismatch("summaries"))
            }
        }
    }

    fn answer(&mut self, answer: Answer) {
        self.asked = None;
        *self.channel.answer.borrow_mut() = Some(answer);
    }

    fn mismatch(&self, given: &str) -> Error {
        let asked = match (&self.asked, &self.done, &self.run) {
            (Some(asked), _, _) => format!("the assembly asked for {}", asked.name()),
            (None, Some(_), _) | (None, None, None) => "the assembly is over".to_owned(),
            (None, None, Some(_)) => "nothing is asked yet: call `next` first".to_owned(),
        };
        Error::StepMismatch(format!("answered {given}, but {asked}"))
    }

    /// Drives the assembly to its end over `host`, for `context`'s
    /// requests: what [`crate::Builder::assemble`] does.
    pub fn drive(
        mut self,
        host: &mut dyn Host,
        context: &AgentContext,
    ) -> Result<ContextPack, Failure> {
        loop {
            let provided = match self.next() {
                Next::Done(outcome) => return outcome,
                Next::Sources(calls) => {
                    let answers: Vec<_> = calls.iter().map(|c| c.call(host, context)).collect();
                    answers
                        .into_iter()
                        .enumerate()
                        .try_for_each(|(k, answer)| self.provide_source(k, answer))
                }
                Next::Review(items) => {
                    let items: Vec<&Candidate> = items.iter().collect();
                    let verdicts = host.review(context, &items);
                    self.provide_review(verdicts)
                }
                Next::Summaries {
                    requests,
                    tokenizer,
                } => {
                    let summaries = host.summarize(requests, tokenizer);
                    self.provide_summaries(summaries)
                }
            };
            // Each answer is the one asked, for each call asked: the
            // driver cannot mismatch, but a bug here must not loop.
            provided?;
        }
    }
}
