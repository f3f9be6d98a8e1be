//! `CL.THROTTLE`'s arguments read as redis-cell reads them, and the quota they name.
//!
//! redis-cell's bucket holds `max_burst + 1` tokens and earns one every
//! `period * 10^9 / count_per_period` nanoseconds, computed in floating point and truncated:
//! [`Rate::new`] makes that figure, so that every reply uses redis-cell's own emission
//! interval. Its three error texts are kept word for word ([`ArgError::text`]); the arguments
//! it would take and misuse (a negative quantity gives tokens back, a negative rate or burst
//! makes a bucket that admits nothing or everything) are refused with texts of our own.

use cellrate::Quota;
use std::fmt;
use std::time::Duration;

/// The name redis-cell registers, in its usage text.
const NAME: &str = "cl.throttle";

/// The rate of one call: the quota its bucket is decided under and the limit it reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rate {
    /// One token every redis-cell emission interval, `max_burst + 1` deep.
    pub quota: Quota,
}

/// Why a call's arguments were refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ArgError {
    /// Not 4 or 5 arguments after the command's name.
    Usage,
    /// An argument that is not a 64-bit integer (as given, shortened).
    NotInteger(String),
    /// `count_per_period` or `period` is 0, or the interval they make truncates to 0 ns.
    ZeroRate,
    /// An argument redis-cell would take but that makes no sense as a limit.
    Invalid(String),
}

/// The longest argument an error text repeats, in bytes: a hostile argument is not echoed
/// whole.
const ECHO_BYTES: usize = 128;

impl ArgError {
    /// The error text, without the leading `-`: redis-cell's own where it has one.
    pub fn text(&self) -> String {
        match self {
            ArgError::Usage => format!(
                "Cell error: Store error: Usage: {NAME} <key> <max_burst> <count per period> \
                 <period> [<quantity>]"
            ),
            ArgError::NotInteger(arg) => {
                format!("Cell error: Store error: Couldn't parse as integer: {arg}")
            }
            ArgError::ZeroRate => "Cell error: Store error: Zero rates are not supported".into(),
            ArgError::Invalid(why) => format!("ERR {why}"),
        }
    }
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

/// Parses an argument as redis-cell does (Rust's `i64` grammar: an optional sign, digits).
pub(crate) fn integer(arg: &[u8]) -> Result<i64, ArgError> {
    std::str::from_utf8(arg)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(|| {
            let shown = &arg[..arg.len().min(ECHO_BYTES)];
            ArgError::NotInteger(String::from_utf8_lossy(shown).into_owned())
        })
}

impl Rate {
    /// The rate of `max_burst count_per_period period` (seconds), checked in redis-cell's order:
    /// a zero rate is its error; then what it would misuse.
    pub fn new(max_burst: i64, count: i64, period: i64) -> Result<Rate, ArgError> {
        if count == 0 || period == 0 {
            return Err(ArgError::ZeroRate);
        }
        if count < 0 || period < 0 {
            return Err(ArgError::Invalid(format!(
                "count per period ({count}) and period ({period}) must be positive"
            )));
        }
        let period_ns = period.checked_mul(1_000_000_000).ok_or_else(|| {
            ArgError::Invalid(format!("a period of {period} s is longer than supported"))
        })?;
        // redis-cell's interval: a float division, truncated.
        let interval_ns = ((period_ns as f64) / (count as f64)) as i64;
        if interval_ns == 0 {
            return Err(ArgError::ZeroRate);
        }
        if max_burst < 0 {
            return Err(ArgError::Invalid(format!(
                "max_burst ({max_burst}) must be 0 or more"
            )));
        }
        let burst = max_burst
            .checked_add(1)
            .and_then(|b| u32::try_from(b).ok())
            .ok_or_else(|| {
                ArgError::Invalid(format!(
                    "max_burst ({max_burst}) must be at most {}",
                    u32::MAX - 1
                ))
            })?;
        let interval = Duration::from_nanos(interval_ns.unsigned_abs());
        let quota = Quota::try_new(interval, burst).map_err(|e| {
            ArgError::Invalid(format!(
                "{max_burst} {count} {period}: not a rate this server can hold ({e})"
            ))
        })?;
        Ok(Rate { quota })
    }

    /// The tokens a full bucket holds: redis-cell's `limit`, `max_burst + 1`.
    pub fn limit(&self) -> i64 {
        i64::from(self.quota.burst())
    }

    /// The emission interval in nanoseconds.
    pub fn interval_ns(&self) -> u64 {
        duration_ns(self.quota.emission_interval())
    }

    /// The bucket's depth (redis-cell's delay variation tolerance) in nanoseconds.
    pub fn depth_ns(&self) -> u64 {
        duration_ns(self.quota.replenish_all())
    }
}

/// A duration of at most 2^62 ns (a quota's figures) in nanoseconds.
pub(crate) fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The arguments of one call after the command's name: `key max_burst count_per_period period
/// [quantity]`, as the key, the rate and the quantity.
pub(crate) fn parse_args<'a>(args: &[&'a [u8]]) -> Result<(&'a [u8], Rate, u64), ArgError> {
    let (key, numbers) = match args {
        [key, rest @ ..] if rest.len() == 3 || rest.len() == 4 => (*key, rest),
        _ => return Err(ArgError::Usage),
    };
    let max_burst = integer(numbers[0])?;
    let count = integer(numbers[1])?;
    let period = integer(numbers[2])?;
    let quantity = match numbers.get(3) {
        Some(arg) => integer(arg)?,
        None => 1,
    };
    let (rate, quantity) = checked(max_burst, count, period, quantity)?;
    Ok((key, rate, quantity))
}

/// The rate and quantity of a call's integers, checked.
pub(crate) fn checked(
    max_burst: i64,
    count: i64,
    period: i64,
    quantity: i64,
) -> Result<(Rate, u64), ArgError> {
    let rate = Rate::new(max_burst, count, period)?;
    let quantity = u64::try_from(quantity).map_err(|_| {
        ArgError::Invalid(format!(
            "quantity ({quantity}) must be 0 or more: tokens are not given back"
        ))
    })?;
    Ok((rate, quantity))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_is_redis_cells_truncated_float() {
        let rate = Rate::new(15, 30, 60).unwrap();
        assert_eq!((rate.interval_ns(), rate.limit()), (2_000_000_000, 16));
        // 60 s / 7 = 8,571,428,571.43 ns: truncated, not rounded up.
        assert_eq!(Rate::new(0, 7, 60).unwrap().interval_ns(), 8_571_428_571);
        // An interval that truncates to 0 ns is redis-cell's zero rate.
        assert_eq!(Rate::new(1, 2_000_000_000, 1), Err(ArgError::ZeroRate));
    }

    #[test]
    fn refusals() {
        assert_eq!(Rate::new(1, 0, 1), Err(ArgError::ZeroRate));
        assert_eq!(Rate::new(1, 1, 0), Err(ArgError::ZeroRate));
        for (b, c, p) in [
            (-1, 1, 1),
            (1, -1, 1),
            (1, 1, -1),
            (i64::MAX, 1, 1),
            (1, 1, i64::MAX),
        ] {
            assert!(
                matches!(Rate::new(b, c, p), Err(ArgError::Invalid(_))),
                "{b} {c} {p}"
            );
        }
        assert_eq!(integer(b"1.5"), Err(ArgError::NotInteger("1.5".to_owned())));
        assert_eq!(integer(b"+7"), Ok(7));
        let long = vec![b'x'; 1 << 20];
        let prefix = "Cell error: Store error: Couldn't parse as integer: ";
        assert_eq!(
            integer(&long).unwrap_err().text().len(),
            prefix.len() + ECHO_BYTES
        );
    }
}
