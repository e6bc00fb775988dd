//! Each tenant's rate: a token bucket per tenant, and the refusal of a
//! request past it.

use super::Service;
use crate::settings::RequestLimits;
use std::time::{Duration, Instant};

/// A token bucket per tenant.
#[derive(Default)]
pub struct RateLimiter {
    buckets: std::sync::Mutex<std::collections::HashMap<String, (f64, Instant)>>,
}

impl RateLimiter {
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
    pub fn admit(&self, tenant: &str) -> Result<(), Throttled> {
        self.rate.take(tenant, &self.limits).map_err(|wait| {
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
