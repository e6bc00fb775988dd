//! Each tenant's fair share of the machine's cores, and of the pool's
//! instances.
//!
//! An assembly holds a seat, one of as many as the pool has instances,
//! from before its request is read until its outcome is known; and the
//! work of an assembly that keeps a core busy — parsing its request, each
//! step of the component, writing its record — runs in turns, at most as
//! many at once as the machine has cores. Of either (the slots), a tenant
//! may hold at most its share: the slots divided among the tenants
//! holding or waiting for one, rounded up, and at least one — but never
//! the last slot, where there are two or more: a turn once taken is not
//! taken back, so work that arrives always finds one free. Once another
//! tenant's work is waiting, the first takes no new turn past its share,
//! so the next slot freed goes to the other. A tenant sending many large requests
//! therefore queues behind its own, not in front of everyone else's.
//! Between turns — while the stores answer — an assembly holds none, so
//! assemblies waiting on slow stores still run side by side, as many as
//! the pool has instances.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// The slots, and who holds them.
pub struct Fair {
    slots: usize,
    state: Mutex<State>,
    changed: Notify,
}

#[derive(Default)]
struct State {
    /// Per tenant: slots held, requests waiting.
    tenants: HashMap<String, (usize, usize)>,
    held: usize,
}

impl State {
    /// A tenant's share now: the slots among the tenants holding or
    /// waiting for one, rounded up; but one slot is always kept for a
    /// tenant that holds none (where there are two or more), since a turn
    /// once taken is not taken back: work that arrives finds a core.
    fn share(&self, slots: usize) -> usize {
        slots
            .div_ceil(self.tenants.len().max(1))
            .min(slots.saturating_sub(1))
            .max(1)
    }
}

/// A slot held for one assembly: given back when dropped.
pub struct Turn {
    fair: Arc<Fair>,
    tenant: String,
}

/// A request waiting for a slot: counted among the waiting until it has
/// one or gives up.
struct Waiting<'a> {
    fair: &'a Fair,
    tenant: &'a str,
    done: bool,
}

impl Fair {
    /// `slots` assemblies at once (at least one).
    pub fn new(slots: usize) -> Arc<Fair> {
        Arc::new(Fair {
            slots: slots.max(1),
            state: Mutex::new(State::default()),
            changed: Notify::new(),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // Each change is a few counts made under the lock, never left
        // halfway: a poisoned lock is taken as it is.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A slot for `tenant`, once one is free within its share.
    pub async fn enter(self: &Arc<Self>, tenant: &str) -> Turn {
        self.state().tenants.entry(tenant.to_owned()).or_default().1 += 1;
        let mut waiting = Waiting {
            fair: self,
            tenant,
            done: false,
        };
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut s = self.state();
                let share = s.share(self.slots);
                let free = s.held < self.slots;
                if let Some(t) = s.tenants.get_mut(tenant)
                    && free
                    && t.0 < share
                {
                    t.0 += 1;
                    t.1 -= 1;
                    s.held += 1;
                    waiting.done = true;
                    return Turn {
                        fair: self.clone(),
                        tenant: tenant.to_owned(),
                    };
                }
            }
            notified.await;
        }
    }

    /// Slots held now, in all and by `tenant`.
    pub fn held(&self, tenant: &str) -> (usize, usize) {
        let s = self.state();
        (s.held, s.tenants.get(tenant).map_or(0, |t| t.0))
    }

    /// Forgets a tenant holding and waiting for nothing, and tells the
    /// waiting that the shares changed.
    fn settle(&self, s: &mut State, tenant: &str) {
        if s.tenants.get(tenant).is_some_and(|t| *t == (0, 0)) {
            s.tenants.remove(tenant);
        }
        self.changed.notify_waiters();
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut s = self.fair.state();
        if let Some(t) = s.tenants.get_mut(&self.tenant) {
            t.0 = t.0.saturating_sub(1);
        }
        s.held = s.held.saturating_sub(1);
        self.fair.settle(&mut s, &self.tenant);
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let mut s = self.fair.state();
        if let Some(t) = s.tenants.get_mut(self.tenant) {
            t.1 = t.1.saturating_sub(1);
        }
        self.fair.settle(&mut s, self.tenant);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn alone_a_tenant_takes_all_but_one_slot_and_beside_another_its_share() {
        let fair = Fair::new(4);
        let mut noisy = Vec::new();
        for _ in 0..3 {
            noisy.push(fair.enter("noisy").await);
        }
        assert_eq!(fair.held("noisy"), (3, 3));
        // A fourth of its own waits: the last slot is kept. The quiet
        // tenant's first takes it at once.
        let f = fair.clone();
        let fourth = tokio::spawn(async move { f.enter("noisy").await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!fourth.is_finished());
        let quiet = tokio::time::timeout(Duration::from_secs(1), fair.enter("quiet"))
            .await
            .expect("the quiet tenant's turn");
        assert_eq!(fair.held("quiet"), (4, 1));
        // Beside the quiet tenant the noisy one's share is two of four:
        // at three, then two, it waits; at one, its fourth goes.
        noisy.pop();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!fourth.is_finished());
        noisy.pop();
        let fourth = tokio::time::timeout(Duration::from_secs(1), fourth)
            .await
            .expect("the noisy tenant's turn")
            .expect("no panic");
        assert_eq!(fair.held("noisy"), (3, 2));
        drop((quiet, fourth, noisy));
        assert_eq!(fair.held("noisy"), (0, 0));
        assert!(fair.state().tenants.is_empty());
    }

    #[tokio::test]
    async fn a_request_that_gives_up_waiting_leaves_no_share_behind() {
        let fair = Fair::new(1);
        let held = fair.enter("a").await;
        let gave_up = tokio::time::timeout(Duration::from_millis(20), fair.enter("b")).await;
        assert!(gave_up.is_err());
        // b is forgotten: a alone has the whole share again.
        assert_eq!(fair.state().tenants.len(), 1);
        drop(held);
        assert!(fair.state().tenants.is_empty());
    }
}
