//! `changed_paired`: what a quota other than the one a limiter was built with costs its checks.
//! A limiter whose quota was changed once (`at(now).set_quota`, the same quota again: the
//! bucket moves, docs/design.md section 10) against one that never changed; and, a keyed
//! limiter's quota being fixed when it is built, a held key checked under a tier's quota
//! (`key(&k).with_quota(q)`, a bucket of its own, its id mixed with the quota) against the same
//! key under the limiter's own quota. On the allowed and the denied path, one thread, the time
//! passed in. Paired as in `paired`.
//!
//! Run: `cargo bench -p cellrate-benches -- changed_paired` (about 15 s).

use crate::core::subjects::{Path, Spend, NOW, YEAR};
use crate::paired::chunks::spends;
use crate::paired::row::{measure, Row};
use cellrate::{KeyedLimiter, Limiter, ManualClock, Quota, QuotaChange};
use std::time::Duration;

/// A limiter on the time passed in, changed once or never.
struct Single(Limiter<ManualClock>);

impl Single {
    fn new(path: Path, changed: bool) -> Single {
        let limiter = Limiter::with_clock(path.quota(), ManualClock::new());
        if changed {
            limiter
                .at(NOW)
                .set_quota(path.quota(), QuotaChange::KeepSpent);
        }
        path.prime(Single(limiter))
    }
}

impl Spend for Single {
    #[inline(always)]
    fn spend(&self) -> bool {
        self.0.at(NOW).check_n(1).is_ok()
    }
}

/// A quota of `path` other than [`Path::quota`]: a tier, on the same path.
fn tier(path: Path) -> Quota {
    match path {
        Path::Allowed => Quota::try_new(Duration::from_nanos(1), u32::MAX - 1)
            .expect("1 ns x (u32::MAX - 1) fits"),
        Path::Denied => Quota::with_period(2 * YEAR),
    }
}

/// One key of a keyed limiter, held before timing, checked under a tier's quota (`TIER`) or
/// under the limiter's own.
struct HeldKey<const TIER: bool>(KeyedLimiter<u64, ManualClock>, Quota);

impl<const TIER: bool> HeldKey<TIER> {
    fn new(path: Path) -> HeldKey<TIER> {
        let limiter = KeyedLimiter::builder(path.quota())
            .max_keys(1_000)
            .clock(ManualClock::new())
            .build();
        let held = path.prime(HeldKey(limiter, tier(path)));
        if path == Path::Allowed {
            assert!(held.spend(), "the key is held before timing");
        }
        held
    }
}

impl<const TIER: bool> Spend for HeldKey<TIER> {
    #[inline(always)]
    fn spend(&self) -> bool {
        let key = self.0.at(NOW).key(&7);
        if TIER {
            key.with_quota(self.1).check_n(1).is_ok()
        } else {
            key.check_n(1).is_ok()
        }
    }
}

/// A row of a key under a tier against the same key under its limiter's own quota.
fn tier_row<'a>(
    name: &str,
    (tier, own): &'a (HeldKey<true>, HeldKey<false>),
    path: Path,
) -> Row<'a> {
    Row::time(
        name,
        spends("tier", tier, path, 1),
        spends("own", own, path, 1),
    )
}

/// A row of a changed subject against one never changed, both on `path`.
fn row<'a, S: Spend>(name: &str, [changed, never]: &'a [S; 2], path: Path) -> Row<'a> {
    Row::time(
        name,
        spends("changed", changed, path, 1),
        spends("never", never, path, 1),
    )
}

pub fn main() {
    println!(
        "changed once / never changed, paired: median with p25 and p75 of the turns' ratios of \
         time per check; each subject's median ns per check"
    );
    let (allowed, denied) = (Path::Allowed, Path::Denied);
    let single = |path| [Single::new(path, true), Single::new(path, false)];
    let keyed = |path| (HeldKey::<true>::new(path), HeldKey::<false>::new(path));
    let (a, d) = (single(allowed), single(denied));
    let (ka, kd) = (keyed(allowed), keyed(denied));
    let mut rows = vec![
        row("Limiter, allowed, changed once / never", &a, allowed),
        row("Limiter, denied, changed once / never", &d, denied),
        tier_row(
            "KeyedLimiter, held key, allowed, tier / own quota",
            &ka,
            allowed,
        ),
        tier_row(
            "KeyedLimiter, held key, denied, tier / own quota",
            &kd,
            denied,
        ),
    ];
    measure("changed_paired", &mut rows, Duration::from_secs(12));
}
