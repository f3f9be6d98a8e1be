//! `changed_paired`: what a quota change costs the checks after it. A limiter whose quota was
//! changed once (`set_quota_at`, the same quota again: the bucket moves, docs/design.md
//! section 10) against one that never changed, and a keyed limiter whose default quota was
//! changed once (`set_default_quota`) against one whose default never changed, on the allowed
//! and the denied path, one thread, the time passed in. Paired as in `paired`.
//!
//! Run: `cargo bench -p cellrate-benches -- changed_paired` (about 15 s).

use crate::core::subjects::{Path, Spend, NOW};
use crate::paired::chunks::spends;
use crate::paired::row::{measure, Row};
use cellrate::{KeyedLimiter, Limiter, ManualClock, QuotaChange};
use std::time::Duration;

/// A limiter on the time passed in, changed once or never.
struct Single(Limiter<ManualClock>);

impl Single {
    fn new(path: Path, changed: bool) -> Single {
        let limiter = Limiter::with_clock(path.quota(), ManualClock::new());
        if changed {
            limiter.set_quota_at(path.quota(), QuotaChange::KeepSpent, NOW);
        }
        path.prime(Single(limiter))
    }
}

impl Spend for Single {
    #[inline(always)]
    fn spend(&self) -> bool {
        self.0.check_n_at(1, NOW).is_ok()
    }
}

/// One key of a keyed limiter, held before any change, its default quota changed once or
/// never.
struct HeldKey(KeyedLimiter<u64, ManualClock>);

impl HeldKey {
    fn new(path: Path, changed: bool) -> HeldKey {
        let limiter = KeyedLimiter::builder(path.quota())
            .max_keys(1_000)
            .clock(ManualClock::new())
            .build();
        let held = path.prime(HeldKey(limiter));
        if path == Path::Allowed {
            assert!(held.spend(), "the key is held before the change");
        }
        if changed {
            held.0.set_default_quota(path.quota());
        }
        held
    }
}

impl Spend for HeldKey {
    #[inline(always)]
    fn spend(&self) -> bool {
        self.0.check_key_n_at(&7, 1, NOW).is_ok()
    }
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
    let keyed = |path| [HeldKey::new(path, true), HeldKey::new(path, false)];
    let (a, d) = (single(allowed), single(denied));
    let (ka, kd) = (keyed(allowed), keyed(denied));
    let mut rows = vec![
        row("Limiter, allowed, changed once / never", &a, allowed),
        row("Limiter, denied, changed once / never", &d, denied),
        row(
            "KeyedLimiter, held key, allowed, default changed / never",
            &ka,
            allowed,
        ),
        row(
            "KeyedLimiter, held key, denied, default changed / never",
            &kd,
            denied,
        ),
    ];
    measure("changed_paired", &mut rows, Duration::from_secs(12));
}
