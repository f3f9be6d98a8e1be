//! The replay oracle: what was carried out must pass an exact token bucket of the quota in
//! force, replayed in time order. It shares no code with the crate's arithmetic: a bucket here
//! is a level of credit in nanoseconds, refilled lazily, as a textbook token bucket is, and
//! the log says only what was carried out, never how the limiter decided it.
//!
//! What counts as carried out (docs/design.md, section 13):
//! - an admitted check, at the time it was decided at, for its cost;
//! - a booking, at its `ready_at`, for its cost, unless it was cancelled (a cancel after
//!   `ready_at` counts it as not carried out either: the oracle is then looser than the
//!   limiter, which keeps the part already refilled spent) or settled lower from `ready_at` on
//!   (then for the settled cost);
//! - the extra of a settle above the booking: charged, not required to pass (the work is done),
//!   behind every booking of the bucket decided before the settle;
//! - a quota change of a limiter at `tc` by a rule: the new quota is in force from
//!   `s = max(tc, latest ready_at of the bookings decided before tc and still carried out)`;
//!   at `s` the bucket is carried over by the rule if `s == tc`, and empty if bookings were
//!   waiting.
#![allow(dead_code)]

use cellrate::{Quota, QuotaChange};

/// A textbook token bucket in exact nanoseconds of credit.
#[derive(Clone, Copy, Debug)]
pub struct Exact {
    interval: u64,
    burst: u32,
    /// Credit in ns: `tokens * interval`, at most the depth; below 0 in debt.
    credit: i128,
    at: u64,
}

impl Exact {
    pub fn full(quota: Quota) -> Exact {
        let interval = quota.emission_interval().as_nanos() as u64;
        let burst = quota.burst();
        Exact {
            interval,
            burst,
            credit: i128::from(interval) * i128::from(burst),
            at: 0,
        }
    }

    pub fn empty_at(quota: Quota, t: u64) -> Exact {
        Exact {
            credit: 0,
            at: t,
            ..Exact::full(quota)
        }
    }

    fn depth(&self) -> i128 {
        i128::from(self.interval) * i128::from(self.burst)
    }

    fn refill(&mut self, t: u64) {
        if t > self.at {
            self.credit = (self.credit + i128::from(t - self.at)).min(self.depth());
            self.at = t;
        }
    }

    /// Takes `cost` tokens at `t` (no earlier than the last time seen) if all are there.
    pub fn take(&mut self, cost: u32, t: u64) -> bool {
        self.book(cost, t, 0)
    }

    /// Books `cost` tokens at `t` if they are all there within `max_wait` ns: the credit may go
    /// as far below zero as the bucket refills in that time, and the booking waits it out.
    pub fn book(&mut self, cost: u32, t: u64, max_wait: u64) -> bool {
        self.refill(t);
        let price = i128::from(cost) * i128::from(self.interval);
        if cost > self.burst || price > self.credit + i128::from(max_wait) {
            return false;
        }
        self.credit -= price;
        true
    }

    /// Charges `cost` tokens at `t` whatever the bucket holds.
    pub fn charge(&mut self, cost: u32, t: u64) {
        self.refill(t);
        self.credit -= i128::from(cost) * i128::from(self.interval);
    }

    /// Whole tokens at `t`.
    pub fn tokens(&mut self, t: u64) -> u32 {
        self.refill(t);
        (self.credit.max(0) / i128::from(self.interval)) as u32
    }

    /// Whether the bucket is full at `t`.
    pub fn is_full(&mut self, t: u64) -> bool {
        self.refill(t);
        self.credit == self.depth()
    }

    /// The bucket carried over to `to` at `t` by `how`, written from the rule's words on the
    /// level (spent = whole tokens used, rounded up), not from the crate's code.
    pub fn changed(mut self, to: Quota, how: QuotaChange, t: u64) -> Exact {
        self.refill(t);
        let mut next = Exact::full(to);
        next.at = t;
        let used = (self.depth() - self.credit).max(0);
        let (t_new, b_new) = (i128::from(next.interval), i128::from(next.burst));
        let spent = (used + i128::from(self.interval) - 1) / i128::from(self.interval);
        let spent_in_bucket = spent.min(i128::from(self.burst));
        next.credit = match how {
            QuotaChange::KeepTime => next.depth() - used,
            QuotaChange::Full => next.depth(),
            QuotaChange::Empty => 0,
            _ if used == 0 => next.depth(),
            QuotaChange::KeepSpent => next.depth() - spent_in_bucket.min(b_new) * t_new,
            QuotaChange::KeepAvailable => {
                (i128::from(self.burst) - spent_in_bucket).min(b_new) * t_new
            }
            QuotaChange::Proportional => {
                let of_new =
                    (spent_in_bucket * b_new + i128::from(self.burst) - 1) / i128::from(self.burst);
                next.depth() - of_new.min(b_new) * t_new
            }
            // A rule this oracle does not know yet (the enum is non-exhaustive outside the crate).
            #[allow(unreachable_patterns)]
            other => panic!("no oracle rule for {other:?}"),
        }
        .min(next.depth());
        next
    }
}

/// One bucket's log: what was carried out and the quota changes, replayed by [`Log::replay`].
#[derive(Debug, Default)]
pub struct Log {
    events: Vec<Event>,
    bookings: Vec<Booking>,
}

#[derive(Clone, Copy, Debug)]
enum Event {
    /// Carried out at `at`: must pass.
    Carried { at: u64, cost: u32, what: usize },
    /// Charged at `at` (the extra of a settle), behind the bookings decided before `decided`.
    Charged { at: u64, cost: u32, decided: usize },
    /// The quota changed at `at` by `how` (a limiter's), decided as event number `decided`.
    Changed {
        at: u64,
        to: Quota,
        how: QuotaChange,
        decided: usize,
    },
    /// The bucket was removed by an overflow eviction: what is decided after it is decided on
    /// a new bucket, whatever its reading.
    Forgotten { decided: usize },
}

/// A booking in the log.
#[derive(Clone, Copy, Debug)]
struct Booking {
    ready_at: u64,
    cost: u32,
    /// The order in which it was decided, among every decision of the log.
    decided: usize,
    cancelled: bool,
    /// The cost it was settled at, if lower and settled from `ready_at` on.
    settled: Option<u32>,
}

/// A handle on a booking of a [`Log`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BookingId(usize);

impl Log {
    fn next_decision(&self) -> usize {
        self.events.len() + self.bookings.len()
    }

    /// An admitted check of `cost` decided at `at`.
    pub fn checked(&mut self, cost: u32, at: u64) {
        let what = self.next_decision();
        self.events.push(Event::Carried { at, cost, what });
    }

    /// A booking of `cost` tokens ready at `ready_at`.
    pub fn booked(&mut self, cost: u32, ready_at: u64) -> BookingId {
        let decided = self.next_decision();
        self.bookings.push(Booking {
            ready_at,
            cost,
            decided,
            cancelled: false,
            settled: None,
        });
        BookingId(self.bookings.len() - 1)
    }

    pub fn cancelled(&mut self, id: BookingId) {
        self.bookings[id.0].cancelled = true;
    }

    /// A settle of the booking at `actual`, at `at`: lower from `ready_at` on carries out
    /// `actual`; higher charges the extra behind the bookings decided before it.
    pub fn settled(&mut self, id: BookingId, actual: u32, at: u64) {
        let booking = self.bookings[id.0];
        if actual < booking.cost && at >= booking.ready_at {
            self.bookings[id.0].settled = Some(actual);
        } else if actual > booking.cost {
            let decided = self.next_decision();
            self.events.push(Event::Charged {
                at,
                cost: actual - booking.cost,
                decided,
            });
        }
    }

    /// A quota change at `at` by `how`.
    pub fn changed(&mut self, to: Quota, how: QuotaChange, at: u64) {
        let decided = self.next_decision();
        self.events.push(Event::Changed {
            at,
            to,
            how,
            decided,
        });
    }

    /// The bucket was evicted although not full (an overflow eviction, a documented loss):
    /// what is decided from now on is decided on a new bucket, and what the old one held
    /// (bookings still to come included) is forgiven: the two are replayed apart.
    pub fn forgotten(&mut self) {
        let decided = self.next_decision();
        self.events.push(Event::Forgotten { decided });
    }

    /// The decisions at which the bucket was forgotten, in order.
    fn epochs(&self) -> Vec<usize> {
        self.events
            .iter()
            .filter_map(|e| match *e {
                Event::Forgotten { decided } => Some(decided),
                _ => None,
            })
            .collect()
    }

    /// Whether the bucket is full at `t` as far as the log knows: the requests carried out by
    /// then replayed, and no booking still to come.
    pub fn is_full_at(&self, start: Exact, quota: Quota, t: u64) -> bool {
        let since = self.epochs().last().copied().unwrap_or(0);
        let start = if since == 0 {
            start
        } else {
            Exact::full(quota)
        };
        if self
            .bookings
            .iter()
            .any(|b| !b.cancelled && b.decided >= since && b.ready_at > t)
        {
            return false;
        }
        self.state_at(start, t, since).is_full(t)
    }

    /// Whole tokens the exact bucket of what the log holds has at `t` (bookings still to come
    /// not yet taken).
    pub fn tokens_at(&self, start: Exact, t: u64) -> u32 {
        let since = self.epochs().last().copied().unwrap_or(0);
        self.state_at(start, t, since).tokens(t)
    }

    /// The bucket at `t`, replaying what the log holds up to then (failures ignored).
    fn state_at(&self, start: Exact, t: u64, since: usize) -> Exact {
        let mut bucket = start;
        for (at, e) in self.timeline(since, usize::MAX) {
            if at > t {
                break;
            }
            match e {
                Event::Carried { cost, .. } => {
                    let _ = bucket.take(cost, at);
                }
                Event::Charged { cost, .. } => bucket.charge(cost, at),
                Event::Changed {
                    at: tc, to, how, ..
                } => {
                    bucket = if at > tc {
                        Exact::empty_at(to, at)
                    } else {
                        bucket.changed(to, how, at)
                    };
                }
                Event::Forgotten { .. } => {}
            }
        }
        bucket
    }

    /// Every event decided in `[from, to)` at the time it takes effect, in the order the
    /// replay takes them.
    fn timeline(&self, from: usize, to: usize) -> Vec<(u64, Event)> {
        let within = |decided: usize| (from..to).contains(&decided);
        let mut timeline: Vec<(u64, u8, usize, Event)> = Vec::new();
        // A request decided after a quota change is decided under the new quota, whatever its
        // reading: it takes effect no earlier than the change.
        let changed_before = |decided: usize| {
            self.events
                .iter()
                .filter_map(|e| match *e {
                    Event::Changed { at, decided: d, .. } if d < decided => Some(at),
                    _ => None,
                })
                .max()
        };
        // Its time, and its place among the events of that time: after a change decided before
        // it (4), else with the requests carried out then (1).
        let after_change = |at: u64, decided: usize, kind: u8| match changed_before(decided) {
            Some(change) if at <= change => (change, 4),
            _ => (at, kind),
        };
        let latest_ready_before = |decided: usize| {
            self.bookings
                .iter()
                .filter(|b| b.decided < decided && !b.cancelled && within(b.decided))
                .map(|b| b.ready_at)
                .max()
        };
        for (i, e) in self.events.iter().enumerate() {
            let decided = match *e {
                Event::Carried { what, .. } => what,
                Event::Charged { decided, .. }
                | Event::Changed { decided, .. }
                | Event::Forgotten { decided } => decided,
            };
            if !within(decided) {
                continue;
            }
            match *e {
                Event::Carried { at, what, .. } => {
                    let (at, kind) = after_change(at, what, 1);
                    timeline.push((at, kind, i, *e))
                }
                Event::Charged { at, decided, .. } => {
                    let at = latest_ready_before(decided).map_or(at, |r| r.max(at));
                    let (at, kind) = after_change(at, decided, 2);
                    timeline.push((at, kind, i, *e))
                }
                Event::Changed { at, decided, .. } => {
                    let waiting = latest_ready_before(decided).filter(|&r| r > at);
                    timeline.push((waiting.unwrap_or(at), 3, i, *e))
                }
                Event::Forgotten { .. } => {}
            }
        }
        for b in self
            .bookings
            .iter()
            .filter(|b| !b.cancelled && within(b.decided))
        {
            let cost = b.settled.unwrap_or(b.cost);
            let (at, kind) = after_change(b.ready_at, b.decided, 1);
            let carried = Event::Carried {
                at,
                cost,
                what: b.decided,
            };
            timeline.push((at, kind, usize::MAX, carried));
        }
        timeline.sort_by_key(|&(at, kind, order, _)| (at, kind, order));
        timeline.into_iter().map(|(at, _, _, e)| (at, e)).collect()
    }

    /// Replays the log through an exact bucket that starts as `start` under `quota`: every
    /// carried-out request must pass. Returns the number replayed, or a description of the
    /// first that fails.
    pub fn replay(&self, start: Exact, quota: Quota) -> Result<usize, String> {
        let mut bounds = vec![0];
        bounds.extend(self.epochs());
        bounds.push(usize::MAX);
        let mut replayed = 0;
        for (k, pair) in bounds.windows(2).enumerate() {
            let start = if k == 0 { start } else { Exact::full(quota) };
            replayed += self.replay_epoch(start, quota, pair[0], pair[1])?;
        }
        Ok(replayed)
    }

    /// [`replay`](Self::replay) of the decisions in `[from, to)`.
    fn replay_epoch(
        &self,
        start: Exact,
        quota: Quota,
        from: usize,
        to: usize,
    ) -> Result<usize, String> {
        let (mut bucket, mut quota, mut replayed) = (start, quota, 0);
        for (t, e) in self.timeline(from, to) {
            match e {
                Event::Carried { cost, what, .. } => {
                    if cost > 0 && !bucket.take(cost, t) {
                        let trace = if std::env::var_os("CELLRATE_REPLAY_TRACE").is_some() {
                            format!("\n{:?}", self.timeline(0, usize::MAX))
                        } else {
                            String::new()
                        };
                        return Err(format!(
                            "decision {what}: {cost} tokens at {t} ns do not pass the exact \
                             bucket of {quota:?} (it holds {} then){trace}",
                            bucket.tokens(t)
                        ));
                    }
                    replayed += 1;
                }
                Event::Charged { cost, .. } => bucket.charge(cost, t),
                Event::Changed { at, to, how, .. } => {
                    bucket = if t > at {
                        Exact::empty_at(to, t)
                    } else {
                        bucket.changed(to, how, t)
                    };
                    quota = to;
                }
                Event::Forgotten { .. } => {}
            }
        }
        Ok(replayed)
    }
}
