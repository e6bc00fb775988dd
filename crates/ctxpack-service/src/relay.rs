//! The service's events on NATS JetStream (`[events]`).
//!
//! **Out: the outbox relay.** Each `ContextAssembled` event is written in
//! its snapshot's transaction (`context_outbox`); a relay in every replica
//! claims waiting events oldest first — on PostgreSQL with row locks that
//! skip what another replica holds — publishes each on its subject with
//! the seed's payload (camelCase) and `Nats-Msg-Id` set to its id, and
//! marks it published once JetStream has acknowledged it. An event
//! published but not marked (a relay killed between the two) is published
//! again and dropped by JetStream as a repeat of its id within the
//! stream's duplicate window: each event is on the stream once. With the
//! broker down, assemblies go on and events wait; they go out when it
//! returns. An attempt has one snapshot, so one event: the order per
//! attempt holds; events are published oldest first.
//!
//! **In: the seed's events.** `SourceDeleted` (deletion lineage, as
//! `POST /factory/sources/{id}/deleted`), `IndexDegraded` and
//! `IndexRevisionReady` (the index is degraded, or has recovered: see
//! [`crate::answerers`]) are captured by a stream of the service's and read
//! through one durable consumer the replicas share, so each is handled
//! once, acknowledged after the store has it; a replica that was down
//! finds them waiting. Index health lives in the store, which every
//! replica reads each second.

use crate::answerers::IndexHealth;
use crate::settings::Events;
use crate::snapshots::{Pending, Store};
use async_nats::jetstream::{self, consumer, stream};
use futures_util::StreamExt;
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How often a relay looks for waiting events when the last round found
/// none.
pub const POLL: Duration = Duration::from_millis(100);

/// The longest wait between attempts on a broker that is down.
const MOST_BACKOFF: Duration = Duration::from_secs(2);

/// The durable consumer the replicas share.
const CONSUMER: &str = "ctxpack-serve";

/// `{"context-snapshot-id": …}` as the seed spells it:
/// `{"contextSnapshotId": …}`.
pub fn payload(kebab: &str) -> Result<Vec<u8>, String> {
    let value: serde_json::Value = serde_json::from_str(kebab).map_err(|e| e.to_string())?;
    if !value.is_object() {
        return Err("the event is not an object".into());
    }
    serde_json::to_vec(&crate::http::camel_keys(value)).map_err(|e| e.to_string())
}

/// Connects to the broker, waiting for it in the background when it is
/// down; the client reconnects by itself.
pub async fn connect(url: &str) -> Result<async_nats::Client, String> {
    async_nats::ConnectOptions::new()
        .name("ctxpack-serve")
        .retry_on_initial_connect()
        .connection_timeout(Duration::from_secs(2))
        .connect(url)
        .await
        .map_err(|e| format!("events.nats {url}: {e}"))
}

fn context(client: async_nats::Client) -> jetstream::Context {
    let mut js = jetstream::new(client);
    js.set_timeout(Duration::from_secs(5));
    js
}

/// Starts the relay and the inbound reader; both stop when `stop` says so.
pub fn start(
    client: async_nats::Client,
    events: Events,
    store: Store,
    health: Arc<IndexHealth>,
    stop: watch::Receiver<bool>,
) -> Vec<tokio::task::JoinHandle<Result<(), String>>> {
    let out = tokio::spawn(relay(
        context(client.clone()),
        events.clone(),
        store.clone(),
        stop.clone(),
    ));
    let inbound = tokio::spawn(inbound(context(client), events, store, health, stop));
    vec![out, inbound]
}

/// Sleeps `d`, or less if the service is stopping; answers whether it is.
async fn pause(stop: &mut watch::Receiver<bool>, d: Duration) -> bool {
    let stopped = tokio::select! {
        _ = tokio::time::sleep(d) => false,
        _ = stop.wait_for(|s| *s) => true,
    };
    stopped || *stop.borrow()
}

async fn ensure_stream(js: &jetstream::Context, events: &Events) -> Result<(), String> {
    js.get_or_create_stream(stream::Config {
        name: events.stream.clone(),
        subjects: vec![crate::snapshots::TOPIC.into()],
        duplicate_window: Duration::from_secs(events.duplicate_window_s),
        storage: stream::StorageType::File,
        ..Default::default()
    })
    .await
    .map(drop)
    .map_err(|e| format!("stream {}: {e}", events.stream))
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

async fn relay(
    js: jetstream::Context,
    events: Events,
    store: Store,
    mut stop: watch::Receiver<bool>,
) -> Result<(), String> {
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

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SourceDeleted {
    tenant_id: String,
    source_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IndexDegraded {
    index_id: String,
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IndexRevisionReady {
    index_id: String,
    #[serde(default)]
    index_revision: Option<String>,
}

/// Handles one inbound event; an error that retrying cannot mend (a
/// payload that is not the event) is logged and the event dropped.
async fn handle(
    events: &Events,
    store: &Store,
    health: &IndexHealth,
    subject: &str,
    body: &[u8],
) -> Result<(), crate::snapshots::StoreError> {
    fn read<'a, T: Deserialize<'a>>(subject: &str, body: &'a [u8]) -> Option<T> {
        serde_json::from_slice(body)
            .map_err(|e| {
                let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
                tracing::error!(target: "ctxpack::events", subject, error = %e, payload = %text, "not the event: dropped");
            })
            .ok()
    }
    if subject == events.source_deleted {
        if let Some(e) = read::<SourceDeleted>(subject, body) {
            let marked = store
                .source_deleted(&e.tenant_id, &e.source_id, &crate::snapshots::now_rfc3339())
                .await?;
            tracing::info!(target: "ctxpack::events", tenant = %e.tenant_id, source = %e.source_id, marked, "SourceDeleted");
        }
    } else if subject == events.index_degraded {
        if let Some(e) = read::<IndexDegraded>(subject, body) {
            let reason = e.reason.unwrap_or_else(|| "IndexDegraded".into());
            store.set_index_health(&e.index_id, true, &reason).await?;
            health.set(store.degraded_indexes().await?);
            tracing::warn!(target: "ctxpack::events", index = %e.index_id, reason = %reason, "IndexDegraded");
        }
    } else if subject == events.index_revision_ready {
        if let Some(e) = read::<IndexRevisionReady>(subject, body) {
            let revision = e.index_revision.unwrap_or_default();
            store
                .set_index_health(&e.index_id, false, &format!("revision {revision} ready"))
                .await?;
            health.set(store.degraded_indexes().await?);
            tracing::info!(target: "ctxpack::events", index = %e.index_id, revision = %revision, "IndexRevisionReady");
        }
    } else {
        tracing::warn!(target: "ctxpack::events", subject, "an event on a subject the service does not read: dropped");
    }
    Ok(())
}

async fn inbound(
    js: jetstream::Context,
    events: Events,
    store: Store,
    health: Arc<IndexHealth>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), String> {
    let mut backoff = POLL;
    loop {
        if *stop.borrow() {
            return Ok(());
        }
        // Index health as the store has it, which other replicas write too.
        if let Ok(d) = store.degraded_indexes().await {
            health.set(d);
        }
        let consumer = async {
            let s = js
                .get_or_create_stream(stream::Config {
                    name: events.inbound_stream.clone(),
                    subjects: vec![
                        events.source_deleted.clone(),
                        events.index_degraded.clone(),
                        events.index_revision_ready.clone(),
                    ],
                    storage: stream::StorageType::File,
                    ..Default::default()
                })
                .await
                .map_err(|e| e.to_string())?;
            s.get_or_create_consumer(
                CONSUMER,
                consumer::pull::Config {
                    durable_name: Some(CONSUMER.into()),
                    ack_policy: consumer::AckPolicy::Explicit,
                    ack_wait: Duration::from_secs(30),
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| e.to_string())
        };
        let consumer = match consumer.await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(target: "ctxpack::events", error = %e, "the broker is not ready; inbound events wait");
                backoff = (backoff * 2).min(MOST_BACKOFF);
                if pause(&mut stop, backoff).await {
                    return Ok(());
                }
                continue;
            }
        };
        backoff = POLL;
        // Fetch in short batches, so index health is re-read each second
        // and a stop is noticed.
        let batch = consumer
            .fetch()
            .max_messages(64)
            .expires(Duration::from_secs(1))
            .messages()
            .await;
        let mut messages = match batch {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(target: "ctxpack::events", error = %e, "reading inbound events");
                if pause(&mut stop, MOST_BACKOFF).await {
                    return Ok(());
                }
                continue;
            }
        };
        while let Some(next) = messages.next().await {
            let Ok(message) = next else {
                break;
            };
            match handle(
                &events,
                &store,
                &health,
                message.subject.as_str(),
                &message.payload,
            )
            .await
            {
                Ok(()) => {
                    if let Err(e) = message.ack().await {
                        tracing::warn!(target: "ctxpack::events", error = %e, "acknowledging an inbound event");
                    }
                }
                // Not acknowledged: redelivered after the ack wait.
                Err(e) => {
                    tracing::warn!(target: "ctxpack::events", error = %e, "an inbound event waits: the store failed");
                }
            }
        }
    }
}

/// What a stream holds, read whole by a consumer of its own.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamCensus {
    /// Messages read.
    pub messages: u64,
    /// Each message id (`Nats-Msg-Id`), with how many messages carry it.
    pub ids: std::collections::BTreeMap<String, u32>,
    /// Messages whose id is not their payload's `contextSnapshotId`.
    pub mismatched: u64,
}

/// Reads every message of `stream` on the broker at `url` through an
/// ephemeral consumer: the independent count of what the relay
/// published.
pub async fn stream_census(url: &str, stream: &str) -> Result<StreamCensus, String> {
    let client = async_nats::ConnectOptions::new()
        .connection_timeout(Duration::from_secs(5))
        .connect(url)
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    let js = context(client);
    let mut s = js
        .get_stream(stream)
        .await
        .map_err(|e| format!("stream {stream}: {e}"))?;
    let total = s.info().await.map_err(|e| e.to_string())?.state.messages;
    let consumer: consumer::PullConsumer = s
        .create_consumer(consumer::pull::Config {
            deliver_policy: consumer::DeliverPolicy::All,
            ack_policy: consumer::AckPolicy::None,
            inactive_threshold: Duration::from_secs(60),
            ..Default::default()
        })
        .await
        .map_err(|e| e.to_string())?;
    let mut census = StreamCensus::default();
    while census.messages < total {
        let mut batch = consumer
            .fetch()
            .max_messages(1000)
            .expires(Duration::from_secs(2))
            .messages()
            .await
            .map_err(|e| e.to_string())?;
        let before = census.messages;
        while let Some(m) = batch.next().await {
            let m = m.map_err(|e| e.to_string())?;
            census.messages += 1;
            let id = m
                .headers
                .as_ref()
                .and_then(|h| h.get("Nats-Msg-Id"))
                .map(|v| v.as_str().to_owned())
                .unwrap_or_default();
            let payload: serde_json::Value = serde_json::from_slice(&m.payload).unwrap_or_default();
            if payload["contextSnapshotId"].as_str() != Some(id.as_str()) {
                census.mismatched += 1;
            }
            *census.ids.entry(id).or_default() += 1;
        }
        if census.messages == before {
            return Err(format!(
                "stream {stream}: {total} messages, only {} could be read",
                census.messages
            ));
        }
    }
    Ok(census)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_payload_is_the_seeds() {
        let out = super::payload(
            r#"{"context-snapshot-id":"s","tenant-id":"t","run-id":"r","attempt-id":"a","status":["complete"],"tokens-used":5,"token-budget":9}"#,
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"attemptId":"a","contextSnapshotId":"s","runId":"r","status":["complete"],"tenantId":"t","tokenBudget":9,"tokensUsed":5}"#
        );
        assert!(super::payload("[1]").is_err());
    }
}
