//! Review: everything admitted goes to `policy.review` in one batch, and
//! each verdict is applied — allowed, redacted (text replaced, counted
//! afresh) or denied (`policy-denied`). The call is recorded with the
//! sources'. If the review fails, or answers a different number of
//! verdicts, the assembly fails (with a failed snapshot): nothing
//! unreviewed is ever returned.

use crate::admit::Admitted;
use crate::error::Error;
use crate::host::{Host, Verdict};
use crate::pack::{Reason, SourceCall, SourceOutcome};
use crate::tokenizer::clamp_len;
use crate::types::AgentContext;

/// Reviews the pending candidates of `admitted`, recording the call in
/// `calls`. On a failure every one of them is `assembly-failed` and the
/// error says why.
pub(crate) fn review(
    admitted: &mut Admitted,
    ctx: &AgentContext,
    host: &mut dyn Host,
    calls: &mut Vec<SourceCall>,
) -> Result<(), Error> {
    let Admitted {
        pool,
        items,
        pending,
    } = admitted;
    if pending.is_empty() {
        return Ok(());
    }
    // The batch borrows the candidates where they are.
    let batch: Vec<_> = pending.iter().map(|&k| &pool[items[k].1]).collect();
    let answer = host.review(ctx, &batch);
    drop(batch);
    let verdicts = match answer {
        Ok(v) if v.len() == pending.len() => Ok(v),
        Ok(v) => Err(format!(
            "answered {} verdicts for {} items",
            v.len(),
            pending.len()
        )),
        Err(e) => Err(e.message),
    };
    calls.push(SourceCall {
        capability: "policy.review".to_owned(),
        outcome: match &verdicts {
            Ok(v) => SourceOutcome::Answered(clamp_len(v.len())),
            Err(message) => SourceOutcome::Failed(message.clone()),
        },
    });
    let verdicts = match verdicts {
        Ok(v) => v,
        Err(message) => {
            // Nothing unreviewed goes on: the assembly fails here.
            for &k in pending.iter() {
                items[k].0.decide(Reason::AssemblyFailed);
            }
            return Err(Error::HostFailed {
                capability: "policy.review".into(),
                message,
            });
        }
    };
    for (&k, verdict) in pending.iter().zip(verdicts) {
        let (item, i) = &mut items[k];
        match verdict {
            Verdict::Allow => {}
            Verdict::Redact(text) => {
                pool[*i].text = text;
                item.redacted = true;
            }
            Verdict::Deny(why) => item.decide(Reason::PolicyDenied(why)),
        }
    }
    Ok(())
}
