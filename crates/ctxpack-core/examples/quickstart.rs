use ctxpack_core::{Answer, AssembleRequest, Builder, Call, Candidate, ContextPack, HostError};
use ctxpack_core::{Next, Verdict};
use serde_json::{from_value, json};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn assemble(builder: &Builder, request: &AssembleRequest) -> Result<ContextPack> {
    let docs: Vec<Candidate> = from_value(json!([{ // what your retriever found
        "id": "kb-1", "section": "relevant-knowledge", "trust": "trusted",
        "text": "Refunds take five business days.",
        "provenance": {"source-kind": "kb", "reference": "refunds.md"}
    }]))?;
    let mut assembly = builder.start(request); // it asks, your stores answer (await them here)
    loop {
        let calls = match assembly.next() {
            Next::Calls(calls) => calls.to_vec(), // one answer per call, keyed as the call
            Next::Done(outcome) => return Ok(outcome?),
        };
        for (i, call) in calls.iter().enumerate() {
            let answer = match call {
                Call::Retrieve { .. } => Answer::Candidates(Ok(docs.clone())),
                Call::Review { items } => Answer::Verdicts(Ok(vec![Verdict::Allow; items.len()])),
                other => other.failed(HostError::not_provided(other.capability())),
            };
            assembly.provide(i, answer)?;
        }
    }
}

fn main() -> Result<()> {
    let config = json!({"profile": {"rag": {"retrieve-limit": 10}}});
    let builder = Builder::new(from_value(config)?)?; // make once, reuse
    let request: AssembleRequest = from_value(json!({
        "context": {"trace-id": "t-1"}, "query": "How long do refunds take?",
        "tokenizer": "o200k-base", "entry-overhead": 0, "keep-last": 6,
        "system-prompt": "Answer from the documents."
    }))?;
    let pack = assemble(&builder, &request)?;
    println!("{}", pack.text);
    let entries = pack.snapshot.entries.iter();
    let reasons: Vec<_> = entries.map(|e| (&e.id, e.reason.name())).collect();
    println!("{} {reasons:?}", pack.snapshot.id);
    Ok(())
}
