//! Inserting a new key: the lock-free protocol that gives each key at most one bucket.
//!
//! # Inserting a new key X
//! 1. **Claim** a free slot (EMPTY or TOMBSTONE; failing that, an idle bucket of another key:
//!    `TAT <= now`, whose removal loses nothing) by a CAS to `(X, PENDING)`. A PENDING slot
//!    holds no tokens, so retracting it (CAS back to TOMBSTONE) loses nothing either.
//! 2. **Resolve**: rescan the window for another slot of X. A live X: retract mine, use it. A
//!    pending X earlier in the window: retract mine and restart (the restart helps that one).
//!    A pending X later in the window: retract it by CAS; if it went live meanwhile, retract
//!    mine and use it.
//! 3. **Publish** by a CAS `(X, PENDING) -> (X, TAT)`, where the TAT is the new bucket's after
//!    the publisher's own request: a new bucket is never visible full and unspent, so another
//!    new key cannot reclaim it as idle before its first spend lands (which could livelock two
//!    keys in one slot). If the CAS fails, mine was retracted (restart the look-up) or a helper
//!    published it (spend from it as from any live bucket).
//!
//! A look-up that meets `(X, PENDING)` resolves and publishes it on the owner's behalf
//! instead of waiting, so a preempted inserter blocks no one.
//!
//! # Why X never has two live buckets
//! Suppose X is live at window positions `p < q` at once, from publishes `P_p` and `P_q`. Let
//! `C_p` be the claim that `P_p` published (the last write of `(X, PENDING)` to slot `p`
//! before it): slot `p` holds X from `C_p` on. Likewise `C_q` for `q`. The publisher of `q`
//! rescanned slot `p` at some `r_q` after `C_q` (it made or saw that claim first) and saw no
//! X there, so `r_q` precedes `C_p`. The publisher of `p` rescanned slot `q` at `r_p` after
//! `C_p`; had it seen X there (pending: it retracts it, which makes `P_q` fail; live: it backs
//! off) it would not have published, so `r_p` precedes `C_q`. Then
//! `C_q < r_q < C_p < r_p < C_q`: impossible in the single total order of `SeqCst`
//! operations. (A rescan that stopped at an EMPTY slot before `p` read it before `p`'s
//! claimer saw it non-EMPTY, which is also before `C_p`.) This is why the claims, publishes,
//! retractions, evictions and every read of the scans are `SeqCst`: the argument is about two
//! different words, which weaker orderings do not order. The loom models check the protocol
//! under sequential consistency; this argument is what carries it to the real orderings.

use super::request::{decide, level, Outcome, Request};
use super::slot::{self, EMPTY, PENDING_TAT, TOMBSTONE};
#[cfg(loom)]
use super::table::Broken;
use super::table::Table;
use super::OverflowPolicy;
use crate::outcome::Denied;
use crate::sync::Ordering;

/// What a scan met, with the words read: the first free (EMPTY or TOMBSTONE) slot, the
/// first idle bucket, and the live bucket nearest to full.
#[derive(Default)]
pub(super) struct Room {
    pub(super) free: Option<(usize, u128)>,
    pub(super) idle: Option<(usize, u128)>,
    pub(super) nearest_full: Option<(usize, u128)>,
}

/// The end of a resolve or insert: the key's bucket, or start the look-up again.
pub(super) enum Step {
    /// This check published the key's new bucket with its own spend applied.
    Mine(Outcome),
    Live(usize, u64),
    Restart,
}

impl Table {
    /// Claims room for the key (a free slot, or by the overflow policy) and resolves the claim.
    pub(super) fn insert(
        &self,
        home: usize,
        req: &Request<'_>,
        room: Room,
    ) -> Result<Step, Denied> {
        // A free slot first, then an idle bucket (lossless to remove), then the policy.
        let (i, seen, overflow) = match (room.free.or(room.idle), room.nearest_full, self.policy) {
            (Some((i, seen)), _, _) => (i, seen, false),
            (None, Some((i, seen)), OverflowPolicy::EvictNearestFull) => (i, seen, true),
            (None, nearest, _) => {
                self.counters.count_denial();
                // Room appears when the bucket nearest to full in the window is full (it is
                // not yet: its TAT is after `now`, or it would have been free). With no such
                // bucket, every slot is being inserted into: room appears very soon.
                let wait = nearest.map_or(1, |(_, w)| slot::tat(w) - req.now);
                // No tokens: the key has no bucket to hold any.
                let empty = level(wait.max(req.quota.depth_ns()), req.quota);
                return Err(Denied::new(empty, Some(wait)));
            }
        };
        #[cfg(loom)]
        if self.broken == Broken::ClaimLiveDirectly {
            let (tat, outcome) = decide(req.initial(), req);
            // SeqCst: as the real claim; the step broken here is the missing rescan.
            let claimed = self.at(home, i).compare_exchange(
                seen,
                slot::pack(req.fp, tat),
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
            return Ok(claimed.map_or(Step::Restart, |_| Step::Mine(outcome)));
        }
        // SeqCst: a claim of the protocol (module docs).
        let claim = self.at(home, i).compare_exchange(
            seen,
            slot::pack(req.fp, PENDING_TAT),
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
        if claim.is_err() {
            return Ok(Step::Restart);
        }
        if slot::is_live(seen) {
            self.counters.key_removed();
            if overflow {
                self.counters.count_eviction();
            }
        }
        Ok(self.resolve(home, i, req))
    }

    /// Steps 2 and 3 of an insert (module docs) for the PENDING slot of the key at position
    /// `p`, by its owner or by a helper. Whoever publishes applies its own request in the
    /// publishing CAS, so a new bucket is never visible full-and-unspent to other keys.
    pub(super) fn resolve(&self, home: usize, p: usize, req: &Request<'_>) -> Step {
        let fp = req.fp;
        for (i, other) in self.window(home).filter(|&(i, _)| i != p) {
            // SeqCst: a read of the claim protocol (module docs).
            let mut word = other.load(Ordering::SeqCst);
            if word == EMPTY {
                break;
            }
            while slot::fingerprint(word) == fp {
                if slot::tat(word) != PENDING_TAT {
                    self.retract(home, fp, p);
                    return Step::Live(i, slot::tat(word));
                }
                if i < p {
                    self.retract(home, fp, p);
                    return Step::Restart;
                }
                // SeqCst: a retraction of the protocol (module docs).
                match other.compare_exchange(word, TOMBSTONE, Ordering::SeqCst, Ordering::SeqCst) {
                    Ok(_) => break,
                    Err(actual) => word = actual,
                }
            }
        }
        let (tat, outcome) = decide(req.initial(), req);
        // SeqCst: a publish of the protocol (module docs).
        match self.at(home, p).compare_exchange(
            slot::pack(fp, PENDING_TAT),
            slot::pack(fp, tat),
            Ordering::SeqCst,
            Ordering::SeqCst,
        ) {
            Ok(_) => {
                self.counters.key_added();
                Step::Mine(outcome)
            }
            Err(actual) if slot::fingerprint(actual) == fp && slot::is_live(actual) => {
                Step::Live(p, slot::tat(actual)) // a helper published it
            }
            Err(_) => Step::Restart, // retracted
        }
    }

    /// Turns the PENDING slot of `fp` at position `p` into a TOMBSTONE, if it still is one.
    fn retract(&self, home: usize, fp: u64, p: usize) {
        // SeqCst: a retraction of the protocol (module docs). A failure means someone else
        // retracted it already (it cannot have been published: see the module docs).
        let _ = self.at(home, p).compare_exchange(
            slot::pack(fp, PENDING_TAT),
            TOMBSTONE,
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
    }
}
