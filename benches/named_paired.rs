//! `named_paired`: what counting costs. A named limiter (`named("api")`: its decisions counted
//! in a line per thread) against the same limiter unnamed, on one thread and on one hot
//! limiter or key shared by two threads; and the per-thread lanes against one shared atomic
//! counter, the design they replace. Paired as in `paired` (two subjects taking turns, median
//! of the turns' ratios, a turn kept only if its threads overlapped). The bounds: the count
//! may cost up to half a default check on one thread and a quarter of the rate on a hot
//! limiter; the lanes must not lose to one shared counter.
//!
//! Run: `cargo bench -p cellrate-benches -- named_paired` (about 30 s).

use crate::core::subjects::{Path, Spend};
use crate::paired::chunks::spends;
use crate::paired::row::{measure, Row};
use cellrate::{KeyedLimiter, Limiter};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A default limiter (TickClock), named or not, on the always-allowed path.
struct Checks(Limiter);

impl Checks {
    fn new(named: bool) -> Checks {
        let limiter = Limiter::new(Path::Allowed.quota());
        Checks(if named { limiter.named("api") } else { limiter })
    }
}

impl Spend for Checks {
    #[inline]
    fn spend(&self) -> bool {
        self.0.check().is_ok()
    }
}

/// An unnamed limiter whose every check also adds to one shared atomic: what counting would
/// cost without lanes.
struct SharedCounter(Limiter, AtomicU64);

impl Spend for SharedCounter {
    #[inline]
    fn spend(&self) -> bool {
        let allowed = self.0.check().is_ok();
        // Relaxed: a tally, as the lanes' adds are.
        self.1.fetch_add(1, Ordering::Relaxed);
        allowed
    }
}

/// One hot key of a default keyed limiter, named or not, on the always-allowed path.
struct HotKey(KeyedLimiter<u64>);

impl HotKey {
    fn new(named: bool) -> HotKey {
        let limiter = KeyedLimiter::builder(Path::Allowed.quota())
            .max_keys(1_000)
            .build();
        HotKey(if named { limiter.named("api") } else { limiter })
    }
}

impl Spend for HotKey {
    #[inline]
    fn spend(&self) -> bool {
        self.0.check_key(&7).is_ok()
    }
}

pub fn main() {
    println!(
        "named / unnamed, paired: median with p25 and p75 of the pairs' ratios; each subject's \
         median ns per check (over all its threads)"
    );
    let allowed = Path::Allowed;
    let (named, unnamed) = (Checks::new(true), Checks::new(false));
    let (named_2, unnamed_2) = (Checks::new(true), Checks::new(false));
    let shared_2 = SharedCounter(Limiter::new(allowed.quota()), AtomicU64::new(0));
    let (key_named, key_unnamed) = (HotKey::new(true), HotKey::new(false));
    let (key_named_2, key_unnamed_2) = (HotKey::new(true), HotKey::new(false));

    let mut rows = vec![
        Row::time(
            "check(), 1 thread, named / unnamed",
            spends("named", &named, allowed, 1),
            spends("unnamed", &unnamed, allowed, 1),
        )
        .bound(1.5),
        Row::rate(
            "one hot limiter, 2 threads, named / unnamed",
            spends("named", &named_2, allowed, 2),
            spends("unnamed", &unnamed_2, allowed, 2),
        )
        .bound(0.75),
        Row::rate(
            "one hot limiter, 2 threads, named / 1 atomic",
            spends("named", &named_2, allowed, 2),
            spends("1 atomic", &shared_2, allowed, 2),
        )
        .bound(1.0),
        Row::time(
            "check_key, one hot key, 1 thread, named / unnamed",
            spends("named", &key_named, allowed, 1),
            spends("unnamed", &key_unnamed, allowed, 1),
        )
        .bound(1.5),
        Row::rate(
            "check_key, one hot key, 2 threads, named / unnamed",
            spends("named", &key_named_2, allowed, 2),
            spends("unnamed", &key_unnamed_2, allowed, 2),
        )
        .bound(0.75),
    ];
    measure("named_paired", &mut rows, Duration::from_secs(24));
}
