//! In: the seed's events — `SourceDeleted`, `IndexDegraded`,
//! `IndexRevisionReady`, `GraphFactsUpdated` — read through one durable
//! consumer the replicas share, each acknowledged once the store (or, for
//! `GraphFactsUpdated`, the cache) has it.

use super::{EventsError, MOST_BACKOFF, POLL, broker, pause};
use crate::answerers::IndexHealth;
use crate::coord::Coord;
use crate::settings::Events;
use crate::snapshots::Store;
use async_nats::jetstream::{self, consumer, stream};
use futures_util::StreamExt;
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The durable consumer the replicas share.
const CONSUMER: &str = "ctxpack-serve";

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
struct GraphFactsUpdated {
    tenant_id: String,
}

/// Why an inbound event waits (it is not acknowledged, and is delivered
/// again).
#[derive(Debug, thiserror::Error)]
pub(super) enum Waits {
    #[error("the store failed: {0}")]
    Store(#[from] crate::snapshots::StoreError),
    #[error("the cache failed: {0}")]
    Cache(#[from] crate::coord::CoordError),
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
    coord: Option<&Coord>,
    subject: &str,
    body: &[u8],
) -> Result<(), Waits> {
    fn read<'a, T: Deserialize<'a>>(subject: &str, body: &'a [u8]) -> Option<T> {
        serde_json::from_slice(body)
            .map_err(|e| {
                let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
                tracing::error!(target: "ctxpack::events", subject, error = %e, payload = %crate::trace::cut(&text), "not the event: dropped");
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
    } else if subject == events.graph_facts_updated {
        if let Some(e) = read::<GraphFactsUpdated>(subject, body) {
            match coord {
                Some(c) => {
                    let generation = c.graph_facts_updated(&e.tenant_id).await?;
                    tracing::info!(target: "ctxpack::events", tenant = %e.tenant_id, generation, "GraphFactsUpdated: the tenant's cached neighbourhoods are not read again");
                }
                None => {
                    tracing::debug!(target: "ctxpack::events", tenant = %e.tenant_id, "GraphFactsUpdated: no cache to invalidate");
                }
            }
        }
    } else {
        tracing::warn!(target: "ctxpack::events", subject, "an event on a subject the service does not read: dropped");
    }
    Ok(())
}

pub(super) async fn read(
    js: jetstream::Context,
    events: Events,
    store: Store,
    health: Arc<IndexHealth>,
    coord: Option<Coord>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), EventsError> {
    let mut backoff = POLL;
    loop {
        if *stop.borrow() {
            return Ok(());
        }
        // Index health as the store has it, which other replicas write too.
        if let Ok(d) = store.degraded_indexes().await {
            health.set(d);
        }
        let consumer = match durable(&js, &events).await {
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
                coord.as_ref(),
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
                    tracing::warn!(target: "ctxpack::events", error = %e, "an inbound event waits");
                }
            }
        }
    }
}

/// The stream that captures the seed's events, and the durable consumer
/// the replicas share, made if they are not there.
async fn durable(
    js: &jetstream::Context,
    events: &Events,
) -> Result<consumer::Consumer<consumer::pull::Config>, EventsError> {
    let subjects = vec![
        events.source_deleted.clone(),
        events.index_degraded.clone(),
        events.index_revision_ready.clone(),
        events.graph_facts_updated.clone(),
    ];
    let s = js
        .get_or_create_stream(stream::Config {
            name: events.inbound_stream.clone(),
            subjects: subjects.clone(),
            storage: stream::StorageType::File,
            ..Default::default()
        })
        .await
        .map_err(broker)?;
    // A stream made by an earlier version captures fewer subjects: the
    // ones missing are added, those it has kept.
    let config = s.cached_info().config.clone();
    if subjects.iter().any(|x| !config.subjects.contains(x)) {
        let mut all = config.subjects.clone();
        all.extend(
            subjects
                .into_iter()
                .filter(|x| !config.subjects.contains(x)),
        );
        js.update_stream(stream::Config {
            subjects: all,
            ..config
        })
        .await
        .map_err(broker)?;
    }
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
    .map_err(broker)
}
