//! The keyed ratios measured as pairs: cellrate and governor 0.10's default keyed limiter
//! take turns on the same keys in one process, a chunk of checks each, and every pair of
//! chunks gives one ratio of their times. The figure is the median of those ratios.
//!
//! Why: on a shared machine the time of a check at 1,000,000 keys moves by 2x within minutes,
//! as other tenants load the memory system. Criterion measures one subject for seconds, then
//! the next. Two chunks of one turn run within milliseconds of each other, under the same
//! load, and which of the two runs first alternates from turn to turn (`paired/row.rs`; a
//! chunk counts only if its thread stayed on a core). The spread of the turns' ratios
//! (p25-p75) is printed, so how much the load still moves the ratio can be seen.
//!
//! Rows: u64 keys in random order (the keys, visiting order and limiters of `keyed`'s
//! `keyed_check_*_keys`):
//! - cellrate with the time passed in (`at(now).key(k).check_n(1)`, as `cellrate_at_now`), on
//!   `TickClock` (its cached time, as `Limiter::new` reads it for these quotas), and at
//!   1,000,000 keys in huge pages, each against governor's `check_key` on its default clock (a
//!   TSC read per check: what a user of governor gets);
//! - cellrate on `TickClock` against governor on its `QuantaUpkeepClock`: equal clocks, both
//!   a load of a time refreshed every 1 ms;
//! - cellrate with SipHash-1-3 fingerprints (`FingerprintHash::SipHash13`, the hash governor
//!   uses) against governor, and the default AES-CMAC fingerprints against SipHash-1-3;
//! - the floor of a check on SipHash (`keyed_floor`'s `siphash_then_cas64`: the key's SipHash,
//!   then a load and a CAS of the slot it picks) against governor and against cellrate, so
//!   that how far the load moves the floor itself can be seen;
//! - the table in huge pages against the same table in 4 KiB pages (left out where
//!   transparent huge pages are `always` on, since both would be huge).
//!
//! Each subject walks the visiting order from its own place, which moves on chunk by chunk.
//!
//! Run: `cargo bench -p cellrate-benches -- keyed_paired` (about 45 s); with
//! `KEYED_PAIRED_ROWS="AES-CMAC|1000000 u64 keys, time"`, only the rows whose names contain
//! one of the parts.

use crate::keyed::subjects::{
    cached_clock, cellrate_limiter, governor_cached_limiter, governor_limiter, huge_page_limiter,
    siphash_limiter, u64_workload, SipCasFloor, U64_SEED,
};
use crate::paired::chunks::walks;
use crate::paired::row::{measure, wanted_by, Row};
use cellrate::{Clock, KeyedLimiter, TickClock};
use std::time::Duration;

/// How long the rows of one key count take turns.
const BUDGET: Duration = Duration::from_secs(16);

/// Whether transparent huge pages are on for every mapping (mode `always`), so that a table
/// not advised to them gets them too.
fn thp_always() -> bool {
    let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled");
    mode.is_ok_and(|m| m.contains("[always]"))
}

pub fn main() {
    println!(
        "median of paired ratios of time per check (below 1: the first subject faster), with \
         p25 and p75 of the ratios; each subject's median ns per check"
    );
    for n in [1_000, 1_000_000] {
        let (keys, order) = u64_workload(n, U64_SEED);
        let key_refs: Vec<&u64> = keys.iter().collect();
        let theirs = governor_limiter(&keys);
        let theirs_cached = governor_cached_limiter(&keys);
        // The two tables of the huge-page comparison are built one after the other, so that
        // neither gets memory the other's build left behind (the order of builds moves this
        // comparison).
        let ours: KeyedLimiter<u64> = cellrate_limiter(&key_refs, TickClock::new());
        let big = huge_page_limiter(&key_refs);
        let cached: KeyedLimiter<u64, _> = cellrate_limiter(&key_refs, cached_clock());
        let sip = siphash_limiter(&key_refs);
        let floor = SipCasFloor::new(n);

        let (now, huge_now) = (ours.clock().now(), big.clock().now());
        let order = &order;
        let (ours, big, sip) = (&ours, &big, &sip);
        let governor = || {
            walks("governor", order, n, 1, |k: &u64| {
                theirs.check_key(k).is_ok()
            })
        };
        let at_now = || {
            walks("cellrate", order, n, 1, move |k: &u64| {
                ours.at(now).key(k).check_n(1).is_ok()
            })
        };
        let on_sip = || {
            walks("SipHash", order, n, 1, move |k: &u64| {
                sip.at(now).key(k).check_n(1).is_ok()
            })
        };
        let sip_cas = || walks("floor", order, n, 1, |k: &u64| floor.check(k));
        let on_cached = || {
            walks("cellrate", order, n, 1, |k: &u64| {
                cached.check_key(k).is_ok()
            })
        };
        let huge = || {
            walks("huge pages", order, n, 1, move |k: &u64| {
                big.at(huge_now).key(k).check_n(1).is_ok()
            })
        };
        let name = |what: &str| format!("{n} u64 keys, {what}");
        let mut rows = vec![
            Row::time(name("time passed in"), at_now(), governor()),
            Row::time(name("TickClock"), on_cached(), governor()),
            Row::time(
                name("both on 1 ms clocks"),
                on_cached(),
                walks("governor", order, n, 1, |k: &u64| {
                    theirs_cached.check_key(k).is_ok()
                }),
            ),
            Row::time(name("SipHash fingerprints"), on_sip(), governor()),
            Row::time(name("AES-CMAC / SipHash"), at_now(), on_sip()),
            Row::time(name("floor: SipHash + CAS"), sip_cas(), governor()),
            Row::time(name("time passed in / floor"), at_now(), sip_cas()),
        ];
        if format!("{big:?}").contains("huge_pages: true") {
            rows.push(Row::time(name("huge pages"), huge(), governor()));
            if !thp_always() {
                rows.push(Row::time(name("huge / 4 KiB pages"), huge(), at_now()));
            }
        }
        rows.retain(|row| wanted_by("KEYED_PAIRED_ROWS", &row.name));
        if !rows.is_empty() {
            measure("keyed_paired", &mut rows, BUDGET);
        }
    }
}
