//! The cache and coordination store: the seed's Redis, optional. With it
//! (`[redis] url`, or `--redis`), the replicas share each tenant's rate
//! limit, and the graph neighbourhoods a store's `sources.expand-graph`
//! answers are cached across them until `GraphFactsUpdated` says a
//! tenant's facts changed. Without it — or while it does not answer, each
//! call bounded by `timeout-ms` — every replica keeps its own rate and no
//! neighbourhood is cached: a single replica behaves as it always has.

use redis::aio::ConnectionManager;
use std::time::Duration;

/// One request from a tenant's allowance, by the generic cell rate
/// algorithm on the server's clock (every replica's the same): `KEYS[1]`
/// holds the tenant's theoretical arrival time in microseconds; `ARGV[1]`
/// is the interval between requests at the rate, `ARGV[2]` the burst's
/// tolerance (burst × interval). Answers 0 when taken, else the
/// microseconds until one would be.
const TAKE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local next_tat = tat + interval
local allowed_at = next_tat - tolerance
if allowed_at > now then return allowed_at - now end
redis.call('SET', KEYS[1], next_tat, 'PX', math.ceil((next_tat - now) / 1000) + 1)
return 0
";

/// The tenant's neighbourhood generation (`KEYS[1]`, 0 when never
/// bumped) and the entry `ARGV[1]` holds under it, in one round trip.
const LOOKUP: &str = r"
local g = redis.call('GET', KEYS[1]) or '0'
return {g, redis.call('GET', ARGV[1] .. g .. ':' .. ARGV[2])}
";

/// Why the coordination store did not answer.
#[derive(Debug, thiserror::Error)]
pub enum CoordError {
    /// It answered with an error, or the connection failed.
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// It did not answer within the timeout.
    #[error("redis: no answer within {0:?}")]
    Timeout(Duration),
}

/// The connection to the cache and coordination store.
#[derive(Clone)]
pub struct Coord {
    conn: ConnectionManager,
    timeout: Duration,
    take: redis::Script,
    lookup: redis::Script,
    /// How long a cached neighbourhood lives at most (0: none is cached).
    pub graph_ttl: Duration,
}

/// The key prefix of `tenant`'s keys; the tenant in braces, a Redis Cluster
/// hash tag, so that one tenant's keys live together.
fn tenant_key(tenant: &str, what: &str) -> String {
    format!("ctxpack:{{{tenant}}}:{what}")
}

impl Coord {
    /// A connection to the server at `url` (`redis://host:port/db`,
    /// `rediss://` for TLS), made as it is first needed and again after
    /// it is lost. Only a URL that does not parse is an error here.
    pub fn new(url: &str, timeout: Duration, graph_ttl: Duration) -> Result<Coord, CoordError> {
        let client = redis::Client::open(url)?;
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(500));
        let conn = ConnectionManager::new_lazy_with_config(client, config)?;
        Ok(Coord {
            conn,
            timeout,
            take: redis::Script::new(TAKE),
            lookup: redis::Script::new(LOOKUP),
            graph_ttl,
        })
    }

    async fn timed<T>(
        &self,
        op: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, CoordError> {
        match tokio::time::timeout(self.timeout, op).await {
            Ok(r) => Ok(r?),
            Err(_) => Err(CoordError::Timeout(self.timeout)),
        }
    }

    /// Whether the server answers a `PING`.
    pub async fn ping(&self) -> Result<(), CoordError> {
        let mut conn = self.conn.clone();
        self.timed(redis::cmd("PING").query_async::<String>(&mut conn))
            .await
            .map(drop)
    }

    /// Takes one request from `tenant`'s allowance of `rate` a second with
    /// `burst` at once, shared by every replica: `None` when taken, else
    /// how long until one would be.
    pub async fn take(
        &self,
        tenant: &str,
        rate: f64,
        burst: u32,
    ) -> Result<Option<Duration>, CoordError> {
        let interval = (1e6 / rate).max(1.0).round() as i64;
        let tolerance = interval.saturating_mul(i64::from(burst.max(1)));
        let mut conn = self.conn.clone();
        let wait: i64 = self
            .timed(
                self.take
                    .key(tenant_key(tenant, "rate"))
                    .arg(interval)
                    .arg(tolerance)
                    .invoke_async(&mut conn),
            )
            .await?;
        Ok((wait > 0).then(|| Duration::from_micros(wait.unsigned_abs())))
    }

    /// The cached neighbourhood of `tenant` under `hash`, if any, and the
    /// generation it was looked up in (to keep the answer under, so that a
    /// `GraphFactsUpdated` between lookup and keeping leaves it unread).
    pub async fn neighbourhood(
        &self,
        tenant: &str,
        hash: &str,
    ) -> Result<(String, Option<String>), CoordError> {
        let mut conn = self.conn.clone();
        let (generation, found): (String, Option<String>) = self
            .timed(
                self.lookup
                    .key(tenant_key(tenant, "graph-generation"))
                    .arg(tenant_key(tenant, "graph:"))
                    .arg(hash)
                    .invoke_async(&mut conn),
            )
            .await?;
        Ok((generation, found))
    }

    /// Keeps `answer` as `tenant`'s neighbourhood `hash` of `generation`,
    /// for [`Coord::graph_ttl`].
    pub async fn keep_neighbourhood(
        &self,
        tenant: &str,
        generation: &str,
        hash: &str,
        answer: &str,
    ) -> Result<(), CoordError> {
        let key = format!("{}{generation}:{hash}", tenant_key(tenant, "graph:"));
        let mut conn = self.conn.clone();
        let secs = self.graph_ttl.as_secs().max(1);
        self.timed(
            redis::cmd("SET")
                .arg(key)
                .arg(answer)
                .arg("EX")
                .arg(secs)
                .query_async::<()>(&mut conn),
        )
        .await
    }

    /// `GraphFactsUpdated`: every neighbourhood cached for `tenant` is
    /// left unread from now on (its generation moves on; the entries
    /// expire). Answers the new generation.
    pub async fn graph_facts_updated(&self, tenant: &str) -> Result<u64, CoordError> {
        let mut conn = self.conn.clone();
        self.timed(
            redis::cmd("INCR")
                .arg(tenant_key(tenant, "graph-generation"))
                .query_async::<u64>(&mut conn),
        )
        .await
    }
}
