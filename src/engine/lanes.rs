//! Lanes: an index that each counting thread holds alone while it lives, so that its adds to
//! a striped count (`tally.rs`) are a load and a store. The handover through the registry's
//! mutex: docs/design.md §11, *Lanes*; the loom model `lanes/loom_tests.rs` checks it.

use crate::sync::lane::Mutex;
use alloc::collections::BinaryHeap;
use core::cmp::Reverse;
#[cfg(loom)]
use std::sync::PoisonError;
#[cfg(not(loom))]
use std::{cell::Cell, sync::PoisonError};

#[cfg(all(test, loom))]
mod loom_tests;

/// A registry of lanes: the indexes given out are distinct until given back.
#[derive(Debug)]
pub(crate) struct Lanes {
    free: Mutex<Free>,
}

/// What the registry holds: the indexes given back, and the next never given out.
#[derive(Debug)]
struct Free {
    returned: BinaryHeap<Reverse<usize>>,
    next: usize,
}

impl Lanes {
    /// A registry that has given out nothing.
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Lanes {
        Lanes {
            free: Mutex::new(Free {
                returned: BinaryHeap::new(),
                next: 0,
            }),
        }
    }

    /// A registry that has given out nothing (loom's mutex is not made in a constant).
    #[cfg(loom)]
    pub(crate) fn new() -> Lanes {
        Lanes {
            free: Mutex::new(Free {
                returned: BinaryHeap::new(),
                next: 0,
            }),
        }
    }

    /// The lowest index not held, now held by the caller until it [`give`](Self::give)s it
    /// back. Lowest first, so that the indexes in use stay as few as the threads that count.
    pub(crate) fn take(&self) -> usize {
        // Nothing panics while the registry is locked: a poisoned lock holds a sound state.
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        match free.returned.pop() {
            Some(Reverse(lane)) => lane,
            None => {
                free.next += 1;
                free.next - 1
            }
        }
    }

    /// Gives `lane` back: the caller adds to it no more.
    pub(crate) fn give(&self, lane: usize) {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        free.returned.push(Reverse(lane));
    }
}

#[cfg(not(loom))]
static LANES: Lanes = Lanes::new();

/// A thread that has not counted yet.
#[cfg(not(loom))]
const UNASSIGNED: usize = usize::MAX;
/// A thread whose lane went back: it counts in the shared lanes.
#[cfg(not(loom))]
const RETIRED: usize = usize::MAX - 1;

#[cfg(not(loom))]
std::thread_local! {
    // Const-initialised and without a destructor, so that reading it is one load with no
    // lazy-initialisation check.
    static LANE: Cell<usize> = const { Cell::new(UNASSIGNED) };
    // Gives the lane back when the thread ends; touched once, when the lane is taken.
    static HELD: Held = const { Held };
}

/// The destructor that gives a thread's lane back.
#[cfg(not(loom))]
struct Held;

#[cfg(not(loom))]
impl Drop for Held {
    fn drop(&mut self) {
        let lane = LANE.with(|l| l.replace(RETIRED));
        if lane < RETIRED {
            LANES.give(lane);
        }
    }
}

/// The calling thread's lane, taken at its first call; past every tally's lanes once it went
/// back.
#[cfg(not(loom))]
#[inline]
pub(crate) fn current() -> usize {
    match LANE.with(Cell::get) {
        UNASSIGNED => assign(),
        lane => lane,
    }
}

/// Takes a lane for the calling thread, its destructor registered first: a thread already
/// ending (its thread-locals destroyed) takes none.
#[cfg(not(loom))]
#[cold]
fn assign() -> usize {
    if HELD.try_with(|_| ()).is_err() {
        LANE.with(|l| l.set(RETIRED));
        return RETIRED;
    }
    let lane = LANES.take();
    LANE.with(|l| l.set(lane));
    lane
}

#[cfg(all(test, not(loom)))]
#[path = "lanes_tests.rs"]
mod tests;
