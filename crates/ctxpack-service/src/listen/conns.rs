//! The connections a listener holds, and who gets the next one.
//!
//! A listener holds at most `max-connections`, and one client address at
//! most `max-connections-per-client`. A connection past either limit
//! waits (at most [`FIRST_BYTES`]) until it has sent something: then it
//! takes the place of one that is idle — open with no request in flight —
//! which is closed: one that never sent anything first, then the one idle
//! the longest (for the per-client limit, of that client's own). A
//! connection that sends nothing in that time, or finds every connection
//! busy, is closed. So idle sockets, however many and however fast
//! reopened, cannot keep a caller with a request to send from being
//! served: a socket that sends nothing never takes a place at the cap,
//! and one that sent nothing is the first to give its place up.
//!
//! A connection is busy from the moment its request head is read until
//! its answer's head is written (see [`Busy`]); it is idle otherwise, and
//! its idleness counts from the last byte read or written.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// The connections open on one listener.
pub struct Conns {
    table: Mutex<Table>,
    max: usize,
    per_client: usize,
    /// What [`Conn::last`] counts milliseconds from.
    epoch: Instant,
}

#[derive(Default)]
struct Table {
    open: HashMap<SocketAddr, Arc<Conn>>,
    by_client: HashMap<IpAddr, usize>,
    /// Connections told to close that have not yet.
    closing: usize,
    /// Connections taken so far.
    taken: u64,
}

/// One open connection, as [`Conns`] sees it.
pub struct Conn {
    peer: SocketAddr,
    /// Milliseconds from [`Conns::epoch`] to its last byte read or written.
    last: AtomicU64,
    /// Its requests in flight.
    busy: AtomicU32,
    /// Its place in the order connections were taken.
    seq: u64,
    /// It sent something.
    spoke: AtomicBool,
    /// It was chosen to make room, and fails its next read or write.
    evicted: AtomicBool,
    /// The task reading it, woken when it is evicted.
    waker: Mutex<Option<Waker>>,
    epoch: Instant,
}

/// The most a connection past a cap waits to send its first bytes.
pub const FIRST_BYTES: std::time::Duration = std::time::Duration::from_millis(500);

/// How many connections past a cap may wait for their first bytes at
/// once, in caps.
pub const WAITING: usize = 4;

/// The least a connection past a cap may wait for its first bytes before
/// a newer one takes its turn.
pub const GRACE: std::time::Duration = std::time::Duration::from_millis(100);

/// Why a connection was not taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// A cap is reached: it is taken once it sends something (see
    /// [`Conns::admit`]).
    Wait,
    /// The listener holds `max-connections`, each with a request in
    /// flight.
    Full,
    /// The client holds `max-connections-per-client`, each busy.
    Client,
}

/// A connection's place among [`Conns`]: given back when it is dropped.
pub struct Place {
    conns: Arc<Conns>,
    conn: Arc<Conn>,
}

impl Conns {
    /// At most `max` connections, `per_client` from one address.
    pub fn new(max: usize, per_client: usize) -> Arc<Conns> {
        Arc::new(Conns {
            table: Mutex::new(Table::default()),
            max: max.max(1),
            per_client: per_client.clamp(1, max.max(1)),
            epoch: Instant::now(),
        })
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        // A panic while the table is held leaves it consistent (each
        // change is a single insert or remove), so a poisoned lock is
        // taken as it is.
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place for a connection from `peer`. At a cap, only for one that
    /// has `spoken` (sent something; [`Refused::Wait`] otherwise), and by
    /// closing an idle connection (of `peer`'s address, where that address
    /// is at its limit) to make room; refused where none is idle.
    pub fn admit(self: &Arc<Self>, peer: SocketAddr, spoken: bool) -> Result<Place, Refused> {
        let mut t = self.table();
        let client = peer.ip();
        let of_client = t.by_client.get(&client).copied().unwrap_or(0);
        // Closing connections still hold a descriptor: at most as many
        // again as the cap.
        if t.open.len() >= 2 * self.max {
            return Err(Refused::Full);
        }
        let at_client = of_client >= self.per_client;
        let at_cap = t.open.len() - t.closing >= self.max;
        if (at_client || at_cap) && !spoken {
            return Err(Refused::Wait);
        }
        let victim = if at_client {
            Some(Self::idlest(&t, Some(client)).ok_or(Refused::Client)?)
        } else if at_cap {
            Some(Self::idlest(&t, None).ok_or(Refused::Full)?)
        } else {
            None
        };
        if let Some(v) = victim {
            v.evict();
            t.closing += 1;
        }
        let conn = Arc::new(Conn {
            peer,
            last: AtomicU64::new(self.now()),
            busy: AtomicU32::new(0),
            seq: t.taken,
            spoke: AtomicBool::new(spoken),
            evicted: AtomicBool::new(false),
            waker: Mutex::new(None),
            epoch: self.epoch,
        });
        if let Some(old) = t.open.insert(peer, conn.clone()) {
            // The same address and port again: the old connection is gone
            // from the kernel's view; it leaves as it is dropped.
            t.open.insert(peer, old);
            return Err(Refused::Client);
        }
        *t.by_client.entry(client).or_default() += 1;
        t.taken += 1;
        Ok(Place {
            conns: self.clone(),
            conn,
        })
    }

    /// The idle connection (of `client`'s, if given) not yet told to
    /// close that sent nothing, or else that was idle the longest.
    fn idlest(t: &Table, client: Option<IpAddr>) -> Option<Arc<Conn>> {
        t.open
            .values()
            .filter(|c| client.is_none_or(|ip| c.peer.ip() == ip))
            .filter(|c| !c.evicted.load(Ordering::Acquire) && c.busy.load(Ordering::Acquire) == 0)
            .min_by_key(|c| {
                (
                    c.spoke.load(Ordering::Relaxed),
                    c.last.load(Ordering::Relaxed),
                    c.seq,
                )
            })
            .cloned()
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The connection from `peer`, if open.
    pub fn get(&self, peer: SocketAddr) -> Option<Arc<Conn>> {
        self.table().open.get(&peer).cloned()
    }

    /// Connections open, and those told to close that have not yet.
    pub fn count(&self) -> (usize, usize) {
        let t = self.table();
        (t.open.len(), t.closing)
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut t = self.conns.table();
        if t.open
            .get(&self.conn.peer)
            .is_some_and(|c| Arc::ptr_eq(c, &self.conn))
        {
            t.open.remove(&self.conn.peer);
            let ip = self.conn.peer.ip();
            if let Some(n) = t.by_client.get_mut(&ip) {
                *n -= 1;
                if *n == 0 {
                    t.by_client.remove(&ip);
                }
            }
            if self.conn.evicted.load(Ordering::Acquire) {
                t.closing -= 1;
            }
        }
    }
}

impl Place {
    /// The connection this place is for.
    pub fn conn(&self) -> &Arc<Conn> {
        &self.conn
    }
}

impl Conn {
    fn evict(&self) {
        self.evicted.store(true, Ordering::Release);
        let waker = self.waker.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Whether it was told to close; if not, `cx` is woken when it is.
    pub fn evicted(&self, cx: &mut Context<'_>) -> bool {
        if self.evicted.load(Ordering::Acquire) {
            return true;
        }
        let mut w = self.waker.lock().unwrap_or_else(|p| p.into_inner());
        if !w.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            *w = Some(cx.waker().clone());
        }
        drop(w);
        self.evicted.load(Ordering::Acquire)
    }

    /// Bytes were read from it now.
    pub fn heard(&self) {
        self.spoke.store(true, Ordering::Relaxed);
        self.touched();
    }

    /// A byte was read or written now.
    pub fn touched(&self) {
        let now = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last.store(now, Ordering::Relaxed);
    }

    /// A request is in flight until the guard is dropped.
    pub fn busy(self: &Arc<Self>) -> BusyGuard {
        self.busy.fetch_add(1, Ordering::AcqRel);
        BusyGuard(self.clone())
    }
}

/// A request in flight on a connection (see [`Conn::busy`]).
pub struct BusyGuard(Arc<Conn>);

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
        self.0.touched();
    }
}

/// A service that marks the connection a request came on busy while it
/// is answered.
#[derive(Clone)]
pub struct Busy<S> {
    pub(crate) inner: S,
    pub(crate) on: On,
}

/// Which connection a [`Busy`] service's requests come on.
#[derive(Clone)]
pub enum On {
    /// This one: HTTP/1.1's service is made per connection.
    Conn(Arc<Conn>),
    /// The one of `Conns` at the peer address tonic gives each request:
    /// gRPC's service is shared by its connections.
    Peer(Arc<Conns>),
}

type Boxed<T> = Pin<Box<dyn std::future::Future<Output = T> + Send>>;

impl<S, B> tower::Service<axum::http::Request<B>> for Busy<S>
where
    S: tower::Service<axum::http::Request<B>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Boxed<Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: axum::http::Request<B>) -> Self::Future {
        let guard = match &self.on {
            On::Conn(conn) => Some(conn.busy()),
            On::Peer(conns) => req
                .extensions()
                .get::<tonic::transport::server::TcpConnectInfo>()
                .and_then(|i| i.remote_addr())
                .and_then(|peer| conns.get(peer))
                .map(|c| c.busy()),
        };
        let answer = self.inner.call(req);
        Box::pin(async move {
            let out = answer.await;
            drop(guard);
            out
        })
    }
}

/// gRPC's layer: [`Busy`] on the connection at each request's peer
/// address.
#[derive(Clone)]
pub struct BusyLayer(pub Arc<Conns>);

impl<S> tower::Layer<S> for BusyLayer {
    type Service = Busy<S>;
    fn layer(&self, inner: S) -> Busy<S> {
        Busy {
            inner,
            on: On::Peer(self.0.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(ip: [u8; 4], port: u16) -> SocketAddr {
        SocketAddr::from((ip, port))
    }

    #[test]
    fn past_the_cap_the_longest_idle_makes_room_and_a_busy_one_never_does() {
        let conns = Conns::new(3, 3);
        let a = conns.admit(peer([10, 0, 0, 1], 1), true).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let b = conns.admit(peer([10, 0, 0, 2], 1), true).unwrap();
        let c = conns.admit(peer([10, 0, 0, 3], 1), true).unwrap();
        let _busy = a.conn().busy();
        b.conn().touched();
        // a is busy; c was touched before b: c goes.
        std::thread::sleep(std::time::Duration::from_millis(5));
        b.conn().touched();
        let d = conns.admit(peer([10, 0, 0, 4], 1), true).unwrap();
        assert!(c.conn().evicted.load(Ordering::Acquire));
        assert!(!a.conn().evicted.load(Ordering::Acquire));
        assert_eq!(conns.count(), (4, 1));
        drop(c);
        assert_eq!(conns.count(), (3, 0));
        // At the cap, one that has sent nothing waits.
        assert_eq!(
            conns.admit(peer([10, 0, 0, 6], 1), false).err(),
            Some(Refused::Wait)
        );
        // Every connection busy: a new one is refused.
        let (_b, _d) = (b.conn().busy(), d.conn().busy());
        assert_eq!(
            conns.admit(peer([10, 0, 0, 5], 1), true).err(),
            Some(Refused::Full)
        );
    }

    #[test]
    fn one_that_never_sent_anything_goes_first() {
        let conns = Conns::new(2, 2);
        let talker = conns.admit(peer([10, 0, 0, 1], 1), false).unwrap();
        talker.conn().heard();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let silent = conns.admit(peer([10, 0, 0, 2], 1), false).unwrap();
        let _new = conns.admit(peer([10, 0, 0, 3], 1), true).unwrap();
        assert!(silent.conn().evicted.load(Ordering::Acquire));
        assert!(!talker.conn().evicted.load(Ordering::Acquire));
    }

    #[test]
    fn a_client_at_its_limit_makes_room_from_its_own() {
        let conns = Conns::new(10, 2);
        let other = conns.admit(peer([10, 0, 0, 9], 1), false).unwrap();
        let a1 = conns.admit(peer([10, 0, 0, 1], 1), true).unwrap();
        let a2 = conns.admit(peer([10, 0, 0, 1], 2), true).unwrap();
        let _a3 = conns.admit(peer([10, 0, 0, 1], 3), true).unwrap();
        assert!(a1.conn().evicted.load(Ordering::Acquire));
        assert!(!other.conn().evicted.load(Ordering::Acquire));
        let (_g1, _g2) = (a1.conn().busy(), a2.conn().busy());
        drop(a1);
        // a2 and a3 are the client's two; a3 idle makes room once more,
        // and once both are busy the client is refused.
        let a4 = conns.admit(peer([10, 0, 0, 1], 4), true).unwrap();
        let _g4 = a4.conn().busy();
        assert_eq!(
            conns.admit(peer([10, 0, 0, 1], 5), true).err(),
            Some(Refused::Client)
        );
    }
}
