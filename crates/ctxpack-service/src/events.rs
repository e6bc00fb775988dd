//! The service's events on NATS JetStream (`[events]`): out, the outbox
//! relay (`outbound`); in, the seed's events (`inbound`).
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
use crate::snapshots::Store;
use async_nats::jetstream::{self, consumer};
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

mod inbound;
mod outbound;

pub use outbound::payload;

/// How often a relay looks for waiting events when the last round found
/// none.
pub const POLL: Duration = Duration::from_millis(100);

/// The longest wait between attempts on a broker that is down.
const MOST_BACKOFF: Duration = Duration::from_secs(2);

/// An error of the broker's client (async-nats has one type per call).
pub type BrokerError = Box<dyn std::error::Error + Send + Sync>;

/// Why the broker or a stream could not be used, or an event not read.
/// It reads as the message the service has always given
/// (`events.nats nats://…: …`, `stream CONTEXT_ASSEMBLY: …`).
#[derive(Debug, thiserror::Error)]
pub enum EventsError {
    /// The broker cannot be connected to; `at` names it
    /// (`events.nats URL`, or the URL).
    #[error("{at}: {source}")]
    Connect {
        /// The broker, as the message names it.
        at: String,
        /// Why not.
        source: async_nats::ConnectError,
    },
    /// A stream cannot be read or made.
    #[error("stream {stream}: {source}")]
    Stream {
        /// The stream.
        stream: String,
        /// Why not.
        source: BrokerError,
    },
    /// The broker failed a request.
    #[error("{0}")]
    Broker(BrokerError),
    /// A stream's messages could not all be read.
    #[error("stream {stream}: {total} messages, only {read} could be read")]
    Incomplete {
        /// The stream.
        stream: String,
        /// Its messages.
        total: u64,
        /// Those read.
        read: u64,
    },
    /// An outbox row that is not JSON, or cannot be written again.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// An outbox row that is not a JSON object.
    #[error("the event is not an object")]
    NotAnObject,
}

/// The broker's error `e`, boxed.
fn broker(e: impl std::error::Error + Send + Sync + 'static) -> EventsError {
    EventsError::Broker(Box::new(e))
}

/// Connects to the broker, waiting for it in the background when it is
/// down; the client reconnects by itself.
pub async fn connect(url: &str) -> Result<async_nats::Client, EventsError> {
    async_nats::ConnectOptions::new()
        .name("ctxpack-serve")
        .retry_on_initial_connect()
        .connection_timeout(Duration::from_secs(2))
        .connect(url)
        .await
        .map_err(|source| EventsError::Connect {
            at: format!("events.nats {url}"),
            source,
        })
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
    coord: Option<crate::coord::Coord>,
    stop: watch::Receiver<bool>,
) -> Vec<tokio::task::JoinHandle<Result<(), EventsError>>> {
    let out = tokio::spawn(outbound::relay(
        context(client.clone()),
        events.clone(),
        store.clone(),
        stop.clone(),
    ));
    let inbound = tokio::spawn(inbound::read(
        context(client),
        events,
        store,
        health,
        coord,
        stop,
    ));
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
pub async fn stream_census(url: &str, stream: &str) -> Result<StreamCensus, EventsError> {
    let client = async_nats::ConnectOptions::new()
        .connection_timeout(Duration::from_secs(5))
        .connect(url)
        .await
        .map_err(|source| EventsError::Connect {
            at: url.to_owned(),
            source,
        })?;
    let js = context(client);
    let mut s = js
        .get_stream(stream)
        .await
        .map_err(|e| EventsError::Stream {
            stream: stream.to_owned(),
            source: Box::new(e),
        })?;
    let total = s.info().await.map_err(broker)?.state.messages;
    let consumer: consumer::PullConsumer = s
        .create_consumer(consumer::pull::Config {
            deliver_policy: consumer::DeliverPolicy::All,
            ack_policy: consumer::AckPolicy::None,
            inactive_threshold: Duration::from_secs(60),
            ..Default::default()
        })
        .await
        .map_err(broker)?;
    let mut census = StreamCensus::default();
    while census.messages < total {
        let mut batch = consumer
            .fetch()
            .max_messages(1000)
            .expires(Duration::from_secs(2))
            .messages()
            .await
            .map_err(broker)?;
        let before = census.messages;
        while let Some(m) = batch.next().await {
            let m = m.map_err(EventsError::Broker)?;
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
            return Err(EventsError::Incomplete {
                stream: stream.to_owned(),
                total,
                read: census.messages,
            });
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
