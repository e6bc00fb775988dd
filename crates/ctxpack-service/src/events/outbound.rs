//! Out: the outbox relay. Each replica claims waiting `ContextAssembled`
//! events oldest first, publishes them with `Nats-Msg-Id` set to their
//! ids, and marks them published once JetStream acknowledged them.

use super::{EventsError, MOST_BACKOFF, POLL, pause};
use crate::settings::Events;
use crate::snapshots::{Pending, Store};
use async_nats::jetstream::{self, stream};
use std::time::Duration;
use tokio::sync::watch;

/// `{"context-snapshot-id": …}` as the seed spells it:
/// `{"contextSnapshotId": …}`.
pub fn payload(kebab: &str) -> Result<Vec<u8>, EventsError> {
    let value: serde_json::Value = serde_json::from_str(kebab)?;
    if !value.is_object() {
        return Err(EventsError::NotAnObject);
    }
    Ok(serde_json::to_vec(&crate::camel::camel_keys(value))?)
}

async fn ensure_stream(js: &jetstream::Context, events: &Events) -> Result<(), EventsError> {
    js.get_or_create_stream(stream::Config {
        name: events.stream.clone(),
        subjects: vec![crate::snapshots::TOPIC.into()],
        duplicate_window: Duration::from_secs(events.duplicate_window_s),
        storage: stream::StorageType::File,
        ..Default::default()
    })
    .await
    .map(drop)
    .map_err(|e| EventsError::Stream {
        stream: events.stream.clone(),
        source: Box::new(e),
    })
}

/// Publishes `pending`, all at once, and answers the ids acknowledged.
async fn publish(js: &jetstream::Context, pending: Vec<Pending>) -> Vec<String> {
    let mut acks = Vec::with_capacity(pending.len());
    for p in pending {
        let body = match payload(&p.payload) {
            Ok(b) => b,
            Err(e) => {
                tracing::error!(target: "ctxpack::relay", event = %p.event_id, error = %e, "an outbox row is not an event; left waiting");
                continue;
            }
        };
        let publish = jetstream::message::PublishMessage::build()
            .payload(body.into())
            .message_id(p.event_id.clone());
        match js.send_publish(p.topic.clone(), publish).await {
            Ok(ack) => acks.push((p.event_id, ack)),
            Err(e) => {
                tracing::warn!(target: "ctxpack::relay", error = %e, "publishing: the broker is unreachable");
                break;
            }
        }
    }
    let mut published = Vec::with_capacity(acks.len());
    for (id, ack) in acks {
        match ack.await {
            Ok(_) => published.push(id),
            Err(e) => {
                tracing::warn!(target: "ctxpack::relay", event = %id, error = %e, "not acknowledged; left waiting");
            }
        }
    }
    published
}

pub(super) async fn relay(
    js: jetstream::Context,
    events: Events,
    store: Store,
    mut stop: watch::Receiver<bool>,
) -> Result<(), EventsError> {
    let mut backoff = POLL;
    let mut stream_ready = false;
    loop {
        if *stop.borrow() {
            return Ok(());
        }
        if !stream_ready {
            match ensure_stream(&js, &events).await {
                Ok(()) => stream_ready = true,
                Err(e) => {
                    tracing::warn!(target: "ctxpack::relay", error = %e, "the broker is not ready; events wait in the outbox");
                    backoff = (backoff * 2).min(MOST_BACKOFF);
                    if pause(&mut stop, backoff).await {
                        return Ok(());
                    }
                    continue;
                }
            }
        }
        let js_ref = &js;
        let round = store
            .relay(
                i64::from(events.batch),
                Box::new(move |pending| Box::pin(publish(js_ref, pending))),
            )
            .await;
        let wait = match round {
            Ok((claimed, marked)) if claimed > 0 && marked == claimed => {
                backoff = POLL;
                if claimed as u32 == events.batch {
                    continue;
                }
                POLL
            }
            Ok((0, _)) => {
                backoff = POLL;
                POLL
            }
            Ok(_) => {
                // Some were not acknowledged: the broker is away.
                backoff = (backoff * 2).min(MOST_BACKOFF);
                backoff
            }
            Err(e) => {
                tracing::warn!(target: "ctxpack::relay", error = %e, "reading the outbox");
                backoff = (backoff * 2).min(MOST_BACKOFF);
                backoff
            }
        };
        if pause(&mut stop, wait).await {
            return Ok(());
        }
    }
}
