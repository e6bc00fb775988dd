//! The HTTP API's page sizes: what a list or a detail holds when the
//! query leaves its size out, and the most it may ask for. The routes
//! ([`crate::http`]) hold requests to them and the API's description
//! ([`crate::openapi`]) states them.

/// The default and the largest page of a run's snapshots.
pub const LIST_PAGE: (u64, u64) = (100, 1000);
/// The default and the largest page of a snapshot's items.
pub const ITEMS_PAGE: (u64, u64) = (500, 5000);
