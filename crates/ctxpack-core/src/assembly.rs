//! The resumable assembly: the step protocol.
//!
//! An [`Assembly`] is one assembly in progress. It says what it needs next
//! from its host — a round of [`Call`]s: source calls, a policy review
//! batch, the summaries of the sections it compresses — takes the host's
//! [`Answer`]s (or failures) and finally yields the pack. A host whose stores are
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
//! most one `summarize` call, and review rounds again if the room a summary
//! left over reaches candidates not yet reviewed. An answer to a step not
//! asked, for a call that does not exist or was answered already, or of
//! another call's kind, is an [`Error::StepMismatch`] and changes nothing:
//! the host can answer again.
//!
//! Inside, the pipeline is an `async` function whose only await points are
//! the host's answers; [`Assembly::next`] polls it once, with a waker that
//! does nothing, until it either finishes or asks.

use crate::call::{Answer, Call};
use crate::error::{Error, Failure, HostError};
use crate::host::{Host, Verdict};
use crate::pack::ContextPack;
use crate::tokenizer::HostCounts;

use crate::types::{AgentContext, Candidate, SummaryRequest, Tokenizer};
use std::borrow::Cow;
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// What an assembly needs next, or its outcome.
// The outcome is large, and given once: boxing it would save nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Next<'a, T = ContextPack> {
    /// A round of calls, independent of each other: answer each with
    /// [`Assembly::provide`], by its index, in any order.
    Calls(&'a [Call<'static>]),
    /// The assembly is over: its pack, or why there is none (with the
    /// failed snapshot once it had begun). Given once; asked again, it is
    /// an [`Error::StepMismatch`].
    Done(Result<T, Failure>),
}

/// A round the pipeline asked, kept by the assembly until every call of it
/// is answered.
struct Asked {
    calls: Vec<Call<'static>>,
    answers: Vec<Option<Answer>>,
}

/// Between the pipeline and its driver: what was asked, what was answered.
#[derive(Default)]
pub(crate) struct Channel {
    asked: RefCell<Option<Asked>>,
    answer: RefCell<Option<Vec<(Call<'static>, Answer)>>>,
    /// Set when the pipeline counts with the host: it runs in passes.
    replay: RefCell<Option<Replay>>,
}

/// Whether two calls ask the same: equal, or equal but for a number that
/// is equal to nothing, itself included (a host's NaN score, lent back
/// in a review).
fn same(c: &Call<'_>, d: &Call<'_>) -> bool {
    c == d || format!("{c:?}") == format!("{d:?}")
}

/// What a pipeline that runs in passes (see `Builder::counted_by_host`)
/// was answered, to answer the next pass again without asking.
struct Replay {
    counts: Rc<HostCounts>,
    /// Every round answered, in order.
    answered: Vec<Vec<(Call<'static>, Answer)>>,
    /// The rounds this pass was answered so far.
    at: usize,
    /// Set when a pass reached a step with counts still wanted: the pass
    /// is over, and the counts are asked.
    stopped: bool,
}

impl Channel {
    /// From now on the pipeline runs in passes counted by `counts`.
    pub(crate) fn replaying(&self, counts: Rc<HostCounts>) {
        *self.replay.borrow_mut() = Some(Replay {
            counts,
            answered: Vec::new(),
            at: 0,
            stopped: false,
        });
    }

    /// Runs `pass` until it is done (`Some`) or reaches a step while the
    /// host has counts to give (`None`): it is then dropped, and the next
    /// pass is answered from the start again.
    pub(crate) async fn until_counts_wanted<T>(
        &self,
        mut pass: Pin<&mut impl Future<Output = T>>,
    ) -> Option<T> {
        if let Some(replay) = self.replay.borrow_mut().as_mut() {
            replay.at = 0;
            replay.stopped = false;
        }
        std::future::poll_fn(|cx| match pass.as_mut().poll(cx) {
            Poll::Ready(outcome) => Poll::Ready(Some(outcome)),
            Poll::Pending if self.stop_taken() => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        })
        .await
    }

    fn stop_taken(&self) -> bool {
        self.replay
            .borrow_mut()
            .as_mut()
            .is_some_and(|r| std::mem::take(&mut r.stopped))
    }

    /// Asks the host's counter for the tokens of `texts`.
    pub(crate) async fn count_tokens(
        &self,
        tokenizer: &str,
        texts: Vec<String>,
    ) -> Result<Vec<u32>, HostError> {
        let call = Call::CountTokens {
            tokenizer: Cow::Owned(tokenizer.to_owned()),
            texts: Cow::Owned(texts),
        };
        let ask = Ask {
            channel: self,
            asked: Some(Asked::of(vec![call])),
            replayed: false,
        };
        match ask.await.pop() {
            Some((_, Answer::Counts(counts))) => counts,
            _ => unreachable_answer(),
        }
    }

    /// Asks the host's counter of messages for the tokens of each list.
    pub(crate) async fn count_messages(
        &self,
        tokenizer: &str,
        lists: Vec<crate::types::MessageList>,
    ) -> Result<Vec<u32>, HostError> {
        let call = Call::CountMessages {
            tokenizer: Cow::Owned(tokenizer.to_owned()),
            lists: Cow::Owned(lists),
        };
        match self.call(call).await {
            (_, Answer::Counts(counts)) => counts,
            _ => unreachable_answer(),
        }
    }

    /// Asks the host to split each text into the pieces a cut keeps.
    pub(crate) async fn split_text(
        &self,
        texts: Vec<String>,
    ) -> Result<Vec<crate::types::TextPieces>, HostError> {
        let call = Call::SplitText {
            texts: Cow::Owned(texts),
        };
        match self.call(call).await {
            (_, Answer::Splits(splits)) => splits,
            _ => unreachable_answer(),
        }
    }

    /// For a pass: the answers this round had in an earlier pass, if it
    /// was asked there; or, if this pass used a count the host has not
    /// given, the end of the pass (`Err`); or nothing: ask the host.
    fn replayed(
        &self,
        calls: &[Call<'static>],
    ) -> Result<Option<Vec<(Call<'static>, Answer)>>, ()> {
        let mut replay = self.replay.borrow_mut();
        let Some(replay) = replay.as_mut() else {
            return Ok(None);
        };
        if let Some(round) = replay.answered.get(replay.at) {
            // A pass asks what the one before asked, as long as it counts
            // the same: it always does (see `Builder::counted_by_host`).
            if round.len() == calls.len() && round.iter().zip(calls).all(|((c, _), d)| same(c, d)) {
                replay.at += 1;
                return Ok(Some(round.clone()));
            }
            replay.answered.truncate(replay.at);
        }
        if replay.counts.wants() {
            replay.stopped = true;
            return Err(());
        }
        Ok(None)
    }

    /// Keeps a round's answers for the passes to come.
    fn keep(&self, answered: &[(Call<'static>, Answer)]) {
        if let Some(replay) = self.replay.borrow_mut().as_mut() {
            replay.answered.push(answered.to_vec());
            replay.at += 1;
        }
    }

    /// Asks the host for the answers to one round of source calls.
    pub(crate) async fn sources(
        &self,
        calls: Vec<Call<'static>>,
    ) -> Vec<Result<Vec<Candidate>, HostError>> {
        let answered = self.ask(calls).await;
        answered
            .into_iter()
            .map(|(_, answer)| match answer {
                Answer::Candidates(a) => a,
                _ => unreachable_answer(),
            })
            .collect()
    }

    /// Asks the policy to review `items`; they come back with the verdicts.
    pub(crate) async fn review(
        &self,
        items: Vec<Candidate>,
    ) -> (Vec<Candidate>, Result<Vec<Verdict>, HostError>) {
        let call = Call::Review {
            items: Cow::Owned(items),
        };
        match self.call(call).await {
            (Call::Review { items }, Answer::Verdicts(verdicts)) => (items.into_owned(), verdicts),
            _ => unreachable_answer(),
        }
    }

    /// Asks the summariser for one summary per request.
    pub(crate) async fn summaries(
        &self,
        requests: Vec<SummaryRequest>,
        tokenizer: Tokenizer,
    ) -> Result<Vec<String>, HostError> {
        let call = Call::Summarize {
            requests: Cow::Owned(requests),
            tokenizer,
        };
        match self.call(call).await {
            (_, Answer::Summaries(answer)) => answer,
            _ => unreachable_answer(),
        }
    }

    /// Asks one call; it comes back with its answer, of its kind.
    pub(crate) async fn call(&self, call: Call<'static>) -> (Call<'static>, Answer) {
        match self.ask(vec![call]).await.pop() {
            Some(answered) => answered,
            None => unreachable_answer(),
        }
    }

    /// Asks a round of calls; each comes back with its answer.
    fn ask(&self, calls: Vec<Call<'static>>) -> Ask<'_> {
        Ask {
            channel: self,
            asked: Some(Asked::of(calls)),
            replayed: true,
        }
    }
}

impl Asked {
    fn of(calls: Vec<Call<'static>>) -> Self {
        let answers = calls.iter().map(|_| None).collect();
        Asked { calls, answers }
    }
}

/// Each answer's kind matches its call's: [`Assembly::provide`] checks it
/// before taking an answer, so a mismatch is a bug here, found by every
/// test that drives a step.
#[allow(clippy::panic)]
fn unreachable_answer() -> ! {
    panic!("an assembly was answered a step it did not ask")
}

/// A question to the host, pending until the driver has answered it.
struct Ask<'c> {
    channel: &'c Channel,
    asked: Option<Asked>,
    /// Whether a pass answers it from an earlier one's answers (every
    /// round but the counts).
    replayed: bool,
}

impl Future for Ask<'_> {
    type Output = Vec<(Call<'static>, Answer)>;

    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        if let Some(asked) = self.asked.take() {
            if self.replayed {
                match self.channel.replayed(&asked.calls) {
                    Ok(Some(answered)) => return Poll::Ready(answered),
                    // The pass is over: it is dropped unanswered.
                    Err(()) => return Poll::Pending,
                    Ok(None) => {}
                }
            }
            *self.channel.asked.borrow_mut() = Some(asked);
            return Poll::Pending;
        }
        let answer = self.channel.answer.borrow_mut().take();
        match answer {
            Some(answer) => {
                if self.replayed {
                    self.channel.keep(&answer);
                }
                Poll::Ready(answer)
            }
            None => Poll::Pending,
        }
    }
}

type Run<'a, T> = Pin<Box<dyn Future<Output = Result<T, Failure>> + 'a>>;

/// One assembly in progress, driven step by step by its host. It borrows
/// its builder and request; an assembly dropped before it is done leaves
/// nothing behind.
///
/// A host awaits its own stores between the steps (here they answer at
/// once; an async host would `.await` each answer, and may answer a
/// round's calls in any order):
///
/// ```
/// use ctxpack_core::{
///     Answer, AssembleRequest, Builder, BuilderConfig, Call, Candidate, HostError, Next, Verdict,
/// };
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
///         Next::Calls(calls) => {
///             let answers: Vec<Answer> = calls
///                 .iter()
///                 .map(|call| match call {
///                     Call::Retrieve { .. } => Answer::Candidates(Ok(retrieved.clone())),
///                     Call::Review { items } => Answer::Verdicts(Ok(vec![Verdict::Allow; items.len()])),
///                     other => other.failed(HostError::not_provided(other.capability())),
///                 })
///                 .collect();
///             for (k, answer) in answers.into_iter().enumerate().rev() {
///                 assembly.provide(k, answer).unwrap();
///             }
///         }
///         Next::Done(outcome) => break outcome.unwrap(),
///     }
/// };
/// assert!(pack.entries.iter().any(|e| e.id == "kb-1"));
/// // Answered what it did not ask, an assembly says so, typed.
/// assert!(assembly.provide(0, Answer::Verdicts(Ok(vec![]))).is_err());
/// ```
///
/// The same steps drive a trim ([`crate::Builder::trim_start`]): an
/// `Assembly` whose outcome is [`crate::Trimmed`].
pub struct Assembly<'a, T = ContextPack> {
    channel: Rc<Channel>,
    run: Option<Run<'a, T>>,
    /// What the pipeline asked and the host has not yet answered in full.
    asked: Option<Asked>,
    /// The outcome, until it is given out.
    done: Option<Result<T, Failure>>,
}

impl<'a, T> Assembly<'a, T> {
    /// An assembly of the pipeline `run` makes from its channel.
    pub(crate) fn new<F>(run: impl FnOnce(Rc<Channel>) -> F) -> Self
    where
        F: Future<Output = Result<T, Failure>> + 'a,
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
    pub fn next(&mut self) -> Next<'_, T> {
        if self.asked.is_none() && self.done.is_none() {
            self.resume();
        }
        if let Some(asked) = &self.asked {
            return Next::Calls(&asked.calls);
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

    /// The answer to call `call` of the round asked (its index in
    /// [`Next::Calls`]), of that call's kind. A source's failure degrades
    /// the assembly; the policy's, or a different number of verdicts,
    /// fails it (nothing unreviewed is ever included); the summariser's,
    /// a different number of summaries or an empty one cuts the section
    /// instead. Once every call of the round is answered, the assembly
    /// goes on at the next [`Assembly::next`].
    pub fn provide(&mut self, call: usize, answer: Answer) -> Result<(), Error> {
        let Some(Asked { calls, answers }) = &mut self.asked else {
            return Err(self.mismatch(answer.name()));
        };
        let Some(slot) = answers.get_mut(call) else {
            return Err(Error::StepMismatch(format!(
                "call {call} does not exist: the round has {} calls",
                calls.len()
            )));
        };
        let asked = calls[call].capability();
        if slot.is_some() {
            return Err(Error::StepMismatch(format!(
                "call {call} (`{asked}`) was answered already"
            )));
        }
        if !calls[call].answered_by(&answer) {
            return Err(Error::StepMismatch(format!(
                "call {call} is `{asked}`, but it was answered with {}",
                answer.name()
            )));
        }
        *slot = Some(answer);
        if answers.iter().all(Option::is_some)
            && let Some(Asked { calls, answers }) = self.asked.take()
        {
            let answered = calls.into_iter().zip(answers.into_iter().flatten());
            *self.channel.answer.borrow_mut() = Some(answered.collect());
        }
        Ok(())
    }

    fn mismatch(&self, given: &str) -> Error {
        let asked = match (&self.done, &self.run) {
            (Some(_), _) | (None, None) => "the assembly is over",
            (None, Some(_)) => "nothing is asked yet: call `next` first",
        };
        Error::StepMismatch(format!("answered with {given}, but {asked}"))
    }

    /// Drives the assembly to its end over `host`, for `context`'s
    /// requests: what [`crate::Builder::assemble`] does.
    pub fn drive(mut self, host: &mut dyn Host, context: &AgentContext) -> Result<T, Failure> {
        loop {
            let answers: Vec<Answer> = match self.next() {
                Next::Done(outcome) => return outcome,
                Next::Calls(calls) => calls.iter().map(|c| c.call(host, context)).collect(),
            };
            // Each answer is the one asked, for each call asked: the
            // driver cannot mismatch, but a bug here must not loop.
            answers
                .into_iter()
                .enumerate()
                .try_for_each(|(k, answer)| self.provide(k, answer))?;
        }
    }
}
