//! redis-cell's `CL.THROTTLE`, transcribed from its arithmetic for the tests to check replies
//! against: each key's theoretical arrival time (TAT) in integer nanoseconds, the emission
//! interval its float division truncates to, the bucket of `max_burst + 1`, the remaining
//! count in whole microseconds, times rounded up to whole seconds from a millisecond. The
//! server's one intended difference is kept here too: `remaining` never below 0. (redis-cell's
//! keys also expire up to a millisecond before their TAT, Redis's TTLs being whole
//! milliseconds; this model, like the server, keeps the exact TAT.)

use std::collections::HashMap;

/// The TATs of every key called, in nanoseconds on the test clock.
#[derive(Default)]
pub struct CellModel {
    tats: HashMap<Vec<u8>, i128>,
}

/// A reply: `[limited, limit, remaining, retry_after, reset_after]`.
pub type Figures = [i64; 5];

fn seconds(ns: i128) -> i64 {
    (ns / 1_000_000_000 + i128::from((ns % 1_000_000_000) / 1_000_000 > 0)) as i64
}

impl CellModel {
    /// The reply to `CL.THROTTLE key max_burst count period quantity` at `now` (ns), for
    /// arguments the server takes.
    pub fn call(
        &mut self,
        now: u64,
        key: &[u8],
        max_burst: i64,
        count: i64,
        period: i64,
        quantity: i64,
    ) -> Figures {
        let now = i128::from(now);
        let interval = ((period as f64 * 1e9) / count as f64) as i128;
        let limit = max_burst + 1;
        let dvt = interval * i128::from(limit);
        let increment = interval * i128::from(quantity);
        let tat = self.tats.get(key).copied().unwrap_or(now).max(now);
        let new_tat = tat + increment;
        let diff = now - (new_tat - dvt);
        let (limited, retry, ttl) = if diff < 0 {
            let retry = if increment <= dvt { seconds(-diff) } else { -1 };
            (1, retry, tat - now)
        } else {
            if new_tat > now {
                self.tats.insert(key.to_vec(), new_tat);
            }
            (0, -1, new_tat - now)
        };
        let next = dvt - ttl;
        let remaining = if next <= 0 {
            0
        } else if interval / 1_000 == 0 {
            (next / interval) as i64
        } else {
            ((next / 1_000) as f64 / (interval / 1_000) as f64) as i64
        };
        [limited, limit, remaining, retry, seconds(ttl)]
    }
}
