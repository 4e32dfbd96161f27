//! An ordered parallel map with a bounded reorder window: the engine of batch mode.
//!
//! `jobs` worker threads take items in index order and compute their results; the calling
//! thread receives the results in index order, each as soon as it and every result before it
//! are done, and consumes them (writes a report's piece, adds to the totals) before the next.
//! A worker may only take item `i` while `i < consumed + window`: at most `window` results are
//! ever computed and not yet consumed, whatever the number of items, so memory is bounded by
//! the window, not by the input. The order the results are consumed in is the items' order,
//! whatever the threads and the scheduling did: output built from them is deterministic.
//!
//! What it does not do: read, render or print anything (the caller's closures do), or stop
//! early on a result (only a failing consumer stops it).

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// What a run of [`map`] measured.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Results consumed.
    pub consumed: usize,
    /// The most results that were computed and not yet consumed at one time (at most the
    /// window).
    pub peak_held: usize,
}

/// Why [`map`] stopped before the end.
#[derive(Debug, PartialEq, Eq)]
pub enum Stop<E> {
    /// The consumer returned an error; the workers stopped taking items.
    Consumer(E),
    /// A worker panicked: its result will never come.
    Worker,
}

struct State<R> {
    /// The next index a worker takes.
    next: usize,
    /// Results consumed so far (the index the consumer waits for).
    consumed: usize,
    /// Results done and not yet consumed, by index.
    ready: BTreeMap<usize, R>,
    peak: usize,
    /// Set when the consumer stops or a worker panicked: workers take nothing more.
    stop: bool,
    /// A worker panicked.
    broken: bool,
    /// The consumer waits for result `consumed` (wake it when that one is ready).
    consumer_waiting: bool,
    /// Workers waiting for the window to move.
    workers_waiting: usize,
}

struct Shared<R> {
    state: Mutex<State<R>>,
    /// Signalled when the result the consumer waits for is ready, or the run is broken.
    ready: Condvar,
    /// Signalled when the window moves or the run stops.
    window: Condvar,
}

impl<R> Shared<R> {
    fn lock(&self) -> MutexGuard<'_, State<R>> {
        // A panic while the lock is held leaves the state consistent (every update is a single
        // assignment or insert), so a poisoned lock is used as it is.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(&self, on: &Condvar, guard: MutexGuard<'a, State<R>>) -> MutexGuard<'a, State<R>> {
        on.wait(guard).unwrap_or_else(PoisonError::into_inner)
    }
}

/// Marks the run broken if its worker unwinds, so that the consumer does not wait forever.
struct PanicGuard<'a, R>(&'a Shared<R>);

impl<R> Drop for PanicGuard<'_, R> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut s = self.0.lock();
            s.stop = true;
            s.broken = true;
            drop(s);
            self.0.ready.notify_all();
            self.0.window.notify_all();
        }
    }
}

/// Computes `work(i, &items[i])` for every item on `jobs` threads (at least 1) and calls
/// `consume(i, result)` on the calling thread in index order, with at most `window` (at least
/// 1) results computed ahead of the consumer.
pub fn map<T, R, E>(
    items: &[T],
    jobs: usize,
    window: usize,
    work: impl Fn(usize, &T) -> R + Sync,
    mut consume: impl FnMut(usize, R) -> Result<(), E>,
) -> Result<Stats, Stop<E>>
where
    T: Sync,
    R: Send,
{
    let window = window.max(1);
    let shared = Shared {
        state: Mutex::new(State {
            next: 0,
            consumed: 0,
            ready: BTreeMap::new(),
            peak: 0,
            stop: false,
            broken: false,
            consumer_waiting: false,
            workers_waiting: 0,
        }),
        ready: Condvar::new(),
        window: Condvar::new(),
    };
    let worker = || {
        let _guard = PanicGuard(&shared);
        loop {
            let i = {
                let mut s = shared.lock();
                while !s.stop && s.next < items.len() && s.next >= s.consumed + window {
                    s.workers_waiting += 1;
                    s = shared.wait(&shared.window, s);
                    s.workers_waiting -= 1;
                }
                if s.stop || s.next >= items.len() {
                    return;
                }
                s.next += 1;
                s.next - 1
            };
            let Some(item) = items.get(i) else { return };
            let r = work(i, item);
            let mut s = shared.lock();
            s.ready.insert(i, r);
            s.peak = s.peak.max(s.ready.len());
            if s.consumer_waiting && i == s.consumed {
                drop(s);
                shared.ready.notify_one();
            }
        }
    };
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(worker);
        }
        let outcome = consume_all(&shared, items.len(), &mut consume);
        let mut s = shared.lock();
        s.stop = true;
        let stats = Stats { consumed: s.consumed, peak_held: s.peak };
        drop(s);
        shared.window.notify_all();
        outcome.map(|()| stats)
    })
}

/// The consumer's side of [`map`]: the results in index order.
fn consume_all<R, E>(
    shared: &Shared<R>,
    len: usize,
    consume: &mut impl FnMut(usize, R) -> Result<(), E>,
) -> Result<(), Stop<E>> {
    loop {
        let (i, r) = {
            let mut s = shared.lock();
            loop {
                if s.consumed >= len {
                    return Ok(());
                }
                let i = s.consumed;
                if let Some(r) = s.ready.remove(&i) {
                    s.consumed += 1;
                    let wake = s.workers_waiting > 0;
                    drop(s);
                    if wake {
                        shared.window.notify_one();
                    }
                    break (i, r);
                }
                if s.broken {
                    return Err(Stop::Worker);
                }
                s.consumer_waiting = true;
                s = shared.wait(&shared.ready, s);
                s.consumer_waiting = false;
            }
        };
        consume(i, r).map_err(Stop::Consumer)?;
    }
}
