//! Each tenant's rate: one allowance all replicas share in the cache and
//! coordination store when there is one ([`crate::coord`]), else — and
//! while it does not answer — a token bucket per tenant in this replica;
//! and the refusal of a request past it.

use super::Service;
use crate::coord::Coord;
use crate::settings::RequestLimits;
use std::time::{Duration, Instant};

/// Each tenant's rate.
#[derive(Default)]
pub struct RateLimiter {
    buckets: std::sync::Mutex<std::collections::HashMap<String, (f64, Instant)>>,
    /// The store the replicas share the allowances in.
    shared: Option<Coord>,
    /// When this replica last said the shared store did not answer.
    said: std::sync::Mutex<Option<Instant>>,
}

impl RateLimiter {
    /// A limiter sharing each tenant's allowance in `shared`, when given.
    pub fn shared(shared: Option<Coord>) -> Self {
        RateLimiter {
            shared,
            ..Default::default()
        }
    }

    /// Takes one request from `tenant`'s allowance: the one the replicas
    /// share when the store answers, else this replica's own.
    pub async fn admit(&self, tenant: &str, limits: &RequestLimits) -> Result<(), Duration> {
        let rate = limits.requests_per_second;
        if rate <= 0.0 {
            return Ok(());
        }
        if let Some(shared) = &self.shared {
            let taken = shared.take(tenant, rate, limits.burst).await;
            if taken.is_ok()
                && let Ok(mut said) = self.said.lock()
                && said.take().is_some()
            {
                tracing::info!(
                    target: "ctxpack::rate",
                    "the shared rate answers again: the replicas count each tenant's rate together"
                );
            }
            match taken {
                Ok(None) => return Ok(()),
                Ok(Some(wait)) => return Err(wait),
                Err(e) => {
                    let now = Instant::now();
                    if let Ok(mut said) = self.said.lock()
                        && said.is_none_or(|at| now.duration_since(at) >= Duration::from_secs(10))
                    {
                        *said = Some(now);
                        tracing::warn!(
                            target: "ctxpack::rate",
                            error = %e,
                            "the shared rate is not answering: this replica counts each tenant's rate alone"
                        );
                    }
                }
            }
        }
        self.take(tenant, limits)
    }

    /// Takes one request from `tenant`'s bucket; when it is empty, how long
    /// until it holds one.
    pub fn take(&self, tenant: &str, limits: &RequestLimits) -> Result<(), Duration> {
        let rate = limits.requests_per_second;
        if rate <= 0.0 {
            return Ok(());
        }
        let burst = f64::from(limits.burst.max(1));
        let now = Instant::now();
        let Ok(mut buckets) = self.buckets.lock() else {
            return Ok(());
        };
        if buckets.len() > 100_000 {
            // Full buckets hold nothing worth keeping.
            buckets.retain(|_, (tokens, at)| {
                *tokens + now.duration_since(*at).as_secs_f64() * rate < burst
            });
        }
        let (tokens, at) = buckets.entry(tenant.to_owned()).or_insert((burst, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * rate).min(burst);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - *tokens) / rate))
        }
    }
}

/// A tenant past its rate: when to come back, and a message saying so.
pub struct Throttled {
    /// Whole seconds until a request would be taken (at least 1).
    pub retry_after_s: u64,
    /// What the client is told.
    pub message: String,
}

impl Service {
    /// Takes one of `tenant`'s requests within its rate limit.
    pub async fn admit(&self, tenant: &str) -> Result<(), Throttled> {
        self.rate.admit(tenant, &self.limits).await.map_err(|wait| {
            let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
            Throttled {
                retry_after_s: secs,
                message: format!(
                    "this tenant sends more than {} requests per second; retry after {secs} s",
                    self.limits.requests_per_second
                ),
            }
        })
    }
}
