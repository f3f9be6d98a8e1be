//! The RLS units of time, as the protos number them and the reference server counts them
//! (a MONTH is 30 days, a YEAR 365), and the `per:` periods of cellrate's extension.

use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_response::rate_limit::Unit as ProtoUnit;
use std::time::Duration;

/// A unit of `requests_per_unit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Unit {
    /// One second.
    Second,
    /// 60 seconds.
    Minute,
    /// 3,600 seconds.
    Hour,
    /// 86,400 seconds.
    Day,
    /// 7 days.
    Week,
    /// 30 days.
    Month,
    /// 365 days.
    Year,
}

impl Unit {
    /// Every unit, shortest first.
    pub const ALL: [Unit; 7] = [
        Unit::Second,
        Unit::Minute,
        Unit::Hour,
        Unit::Day,
        Unit::Week,
        Unit::Month,
        Unit::Year,
    ];

    /// The unit's length in seconds.
    pub fn seconds(self) -> u64 {
        match self {
            Unit::Second => 1,
            Unit::Minute => 60,
            Unit::Hour => 3_600,
            Unit::Day => 86_400,
            Unit::Week => 7 * 86_400,
            Unit::Month => 30 * 86_400,
            Unit::Year => 365 * 86_400,
        }
    }

    /// The unit's length.
    pub fn duration(self) -> Duration {
        Duration::from_secs(self.seconds())
    }

    /// The unit named `name` in a config file (`second` ... `year`, any case).
    pub fn from_name(name: &str) -> Option<Unit> {
        Unit::ALL
            .into_iter()
            .find(|unit| unit.name().eq_ignore_ascii_case(name))
    }

    /// The unit's name in upper case, as the protos spell it.
    pub fn name(self) -> &'static str {
        self.proto().as_str_name()
    }

    /// The protos' value of the unit.
    pub fn proto(self) -> ProtoUnit {
        match self {
            Unit::Second => ProtoUnit::Second,
            Unit::Minute => ProtoUnit::Minute,
            Unit::Hour => ProtoUnit::Hour,
            Unit::Day => ProtoUnit::Day,
            Unit::Week => ProtoUnit::Week,
            Unit::Month => ProtoUnit::Month,
            Unit::Year => ProtoUnit::Year,
        }
    }

    /// The unit of a proto's number; `None` for UNKNOWN and numbers the protos do not define.
    pub fn from_proto(value: i32) -> Option<Unit> {
        match ProtoUnit::try_from(value).ok()? {
            ProtoUnit::Unknown => None,
            ProtoUnit::Second => Some(Unit::Second),
            ProtoUnit::Minute => Some(Unit::Minute),
            ProtoUnit::Hour => Some(Unit::Hour),
            ProtoUnit::Day => Some(Unit::Day),
            ProtoUnit::Week => Some(Unit::Week),
            ProtoUnit::Month => Some(Unit::Month),
            ProtoUnit::Year => Some(Unit::Year),
        }
    }
}

/// Parses a `per:` period: a whole number and a unit, `ms`, `s`, `m`, `h` or `d` (`30s`,
/// `5m`, `250ms`). `None` if it is not one, or is zero.
pub fn parse_period(text: &str) -> Option<Duration> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (digits, suffix) = text.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let nanos_per: u64 = match suffix.trim() {
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => return None,
    };
    let nanos = n.checked_mul(nanos_per).filter(|&ns| ns > 0)?;
    Some(Duration::from_nanos(nanos))
}

/// How a limit of `n` per `period` is reported in `current_limit`: in the shortest unit that
/// holds a whole number of periods, `n` scaled by that number (10 per 30 s is 20 per MINUTE).
/// `None` if no unit holds a whole number of periods, or the scaled count passes `u32::MAX`.
pub fn report_in_unit(n: u32, period: Duration) -> Option<(u32, Unit)> {
    let period_ns = u64::try_from(period.as_nanos()).ok()?;
    Unit::ALL.into_iter().find_map(|unit| {
        let unit_ns = u64::try_from(unit.duration().as_nanos()).ok()?;
        if period_ns == 0 || unit_ns % period_ns != 0 {
            return None;
        }
        let scaled = u64::from(n).checked_mul(unit_ns / period_ns)?;
        Some((u32::try_from(scaled).ok()?, unit))
    })
}
