//! Replays the token-bucket guide's three workloads (burst, steady, flood) through the real
//! `cellrate::Limiter` on a `ManualClock`, prints every decision, and charts the bucket level.
//!
//! ```text
//! cargo run --release --example simulate
//! cargo run --release --example simulate -- --workload flood --rate 3 --burst 4
//! cargo run --release --example simulate -- --help
//! ```
//!
//! The chart's level is read from the limiter itself: a peek (`check_n(0)`) at the end of each
//! time slot is always allowed, spends nothing, and its `reset_after` is `TAT - now`, so the
//! level is `depth - reset_after` nanoseconds of credit, or `(D - reset_after) / T` tokens.

mod args;
mod chart;

use args::{Command, Options, USAGE};
use cellrate::{Allowed, Denied, Limiter, ManualClock, Nanos, Quota, QuotaError};
use chart::{Chart, Column};
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

const NANOS_PER_SECOND: u64 = 1_000_000_000;
/// The guide's chart spans twelve seconds; longer runs stretch it.
const MIN_HORIZON_NS: u64 = 12 * NANOS_PER_SECOND;

/// One request and the limiter's answer.
struct Decision {
    at_ns: u64,
    outcome: Result<Allowed, Denied>,
}

fn main() -> ExitCode {
    let options = match args::parse(std::env::args().skip(1)) {
        Ok(Command::Run(options)) => options,
        Ok(Command::Help) => return write_stdout(USAGE),
        Err(error) => {
            eprintln!("simulate: {error}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let quota = match quota_from_flags(&options) {
        Ok(quota) => quota,
        Err(error) => {
            let (rate, burst) = (options.rate, options.burst);
            eprintln!("simulate: invalid quota (--rate {rate} --burst {burst}): {error}");
            eprintln!("run with --help for the flags");
            return ExitCode::from(2);
        }
    };
    write_stdout(&report(&options, &quota))
}

/// The quota the flags ask for: `rate` tokens a second, one every `ceil(1e9 / rate)` ns (the
/// rounding `Quota::per_second` does, so that the rate never exceeds the flag), holding
/// `burst`. A zero rate or burst is the library's `QuotaError`, reported as such.
fn quota_from_flags(options: &Options) -> Result<Quota, QuotaError> {
    if options.rate == 0 {
        return Err(QuotaError::ZeroRate);
    }
    let interval_ns = 1_000_000_000u64.div_ceil(u64::from(options.rate));
    Quota::try_new(Duration::from_nanos(interval_ns), options.burst)
}

/// Everything the example prints: the quota, then each workload's table and chart, then one
/// summary line per workload.
fn report(options: &Options, quota: &Quota) -> String {
    let mut out = format!(
        "quota: {} tokens/s (one every {}), capacity {} tokens, empty to full in {} s\n\
         the bucket starts full at t = 0; every request costs one token\n\
         time is simulated: the limiter reads a ManualClock set to each request's time, so the\n\
         run takes no real time and prints the same every time\n\
         \n\
         columns: remaining    whole tokens left after the request\n\
         \x20        level        tokens in the bucket after an allowed request, or that a\n\
         \x20                     denied one found there (it spends nothing)\n\
         \x20        retry-after  for a denial: how long until the same request would pass\n\
         \x20        reset-after  how long until the bucket is full again\n",
        options.rate,
        millis(duration_ns(quota.emission_interval())),
        quota.burst(),
        seconds(duration_ns(quota.replenish_all())),
    );
    let mut summary = String::from("\nsummary:\n");
    for &workload in &options.workloads {
        let gap_ns = options.gap_ns.unwrap_or(workload.default_gap_ns());
        let count = options.count.unwrap_or(workload.default_count());
        // At most 10,000 requests 3,600 s apart (3.6e16 ns): no overflow below.
        let times: Vec<u64> = (0..u64::from(count)).map(|i| i * gap_ns).collect();
        let last_ns = times.last().copied().unwrap_or(0);
        // One gap past the last request, rounded up to whole seconds: past the last request
        // unless the gap is 0, and then every request is at 0.
        let horizon_ns = (last_ns + gap_ns).div_ceil(NANOS_PER_SECOND) * NANOS_PER_SECOND;
        let chart = Chart {
            width: options.width,
            height: options.height,
            horizon_ns: horizon_ns.max(MIN_HORIZON_NS),
            depth_ns: duration_ns(quota.replenish_all()),
            burst: quota.burst(),
        };
        let (decisions, columns) = replay(*quota, &times, &chart);

        let what = format!(
            "{}: {count} requests, one every {} s",
            workload.name(),
            seconds(gap_ns)
        );
        out += &format!("\n== {what} ==\n");
        out += &decision_table(&decisions, quota);
        out += &format!(
            "\nbucket level in tokens at the end of each {} s slot, 0 to {} s:\n",
            seconds(chart.horizon_ns / chart.width as u64),
            chart.horizon_ns / NANOS_PER_SECOND
        );
        out += &chart.render(&columns);

        let passed = decisions.iter().filter(|d| d.outcome.is_ok()).count();
        let denied = decisions.len() - passed;
        summary += &format!("  {what:<40} {passed:>5} passed {denied:>5} denied\n");
    }
    out + &summary
}

/// Sends one request at each of `times` through a fresh, full limiter, and peeks at the level
/// at the end of each chart slot, in time order so that no peek ever reads a stale clock.
fn replay(quota: Quota, times: &[u64], chart: &Chart) -> (Vec<Decision>, Vec<Column>) {
    let clock = ManualClock::new();
    let limiter = Limiter::with_clock(quota, clock.clone());
    let mut decisions = Vec::with_capacity(times.len());
    let mut columns = vec![Column::default(); chart.width];
    let mut pending = times.iter().copied().peekable();
    for (index, column) in columns.iter_mut().enumerate() {
        let slot_end_ns = chart.slot_end_ns(index);
        while let Some(at_ns) = pending.next_if(|&t| t <= slot_end_ns) {
            clock.set(Nanos::new(at_ns));
            let outcome = limiter.check();
            match outcome {
                Ok(_) => column.allowed += 1,
                Err(_) => column.denied += 1,
            }
            decisions.push(Decision { at_ns, outcome });
        }
        clock.set(Nanos::new(slot_end_ns));
        column.level_ns = level_ns(&limiter.check_n(0), &quota);
    }
    // Requests past the chart's horizon (none with the horizon `report` picks) still run.
    for at_ns in pending {
        clock.set(Nanos::new(at_ns));
        let outcome = limiter.check();
        decisions.push(Decision { at_ns, outcome });
    }
    (decisions, columns)
}

/// The level after a decision in nanoseconds of credit: `depth - reset_after`. After an
/// allowed request that is what is left; after a denial, what the request found.
fn level_ns(outcome: &Result<Allowed, Denied>, quota: &Quota) -> u64 {
    let reset_after = match outcome {
        Ok(allowed) => allowed.reset_after(),
        Err(denied) => denied.reset_after(),
    };
    duration_ns(quota.replenish_all()).saturating_sub(duration_ns(reset_after))
}

/// One line per request: number, time, decision, whole tokens left, exact level, and the
/// retry-after (denials only) and reset-after figures, exact to the nanosecond.
fn decision_table(decisions: &[Decision], quota: &Quota) -> String {
    let mut table = format!(
        "{:>5} {:>9}  {:<6} {:>9} {:>8} {:>14} {:>14}\n",
        "req", "time s", "result", "remaining", "level", "retry-after", "reset-after"
    );
    for (index, decision) in decisions.iter().enumerate() {
        let (verdict, remaining, retry_after, reset_after) = match &decision.outcome {
            Ok(allowed) => ("ALLOW", allowed.remaining(), None, allowed.reset_after()),
            Err(denied) => (
                "DENY",
                denied.remaining(),
                Some(denied.retry_after()),
                denied.reset_after(),
            ),
        };
        let retry_after = match retry_after {
            None => "-".to_string(),
            Some(Some(wait)) => millis(duration_ns(wait)),
            Some(None) => "never".to_string(),
        };
        table += &format!(
            "{:>5} {:>9}  {verdict:<6} {remaining:>9} {:>8} {retry_after:>14} {:>14}\n",
            index + 1,
            seconds(decision.at_ns),
            tokens(level_ns(&decision.outcome, quota), quota),
            millis(duration_ns(reset_after)),
        );
    }
    table
}

/// Whole nanoseconds in `d`, saturating (every duration here came from a `u64` of them).
fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Seconds with three decimals (truncated), e.g. `1.350`.
fn seconds(ns: u64) -> String {
    let millis = ns / 1_000_000;
    format!("{}.{:03}", millis / 1000, millis % 1000)
}

/// Milliseconds, exact: three decimals, or six when there are stray nanoseconds.
fn millis(ns: u64) -> String {
    let (whole, part) = (ns / 1_000_000, ns % 1_000_000);
    if part % 1000 == 0 {
        format!("{whole}.{:03} ms", part / 1000)
    } else {
        format!("{whole}.{part:06} ms")
    }
}

/// A level in nanoseconds of credit as tokens, with three decimals (truncated).
fn tokens(level_ns: u64, quota: &Quota) -> String {
    let thousandths = u128::from(level_ns) * 1000 / quota.emission_interval().as_nanos();
    format!("{}.{:03}", thousandths / 1000, thousandths % 1000)
}

/// Prints `text`; a closed pipe (`| head`) ends the program quietly instead of panicking.
fn write_stdout(text: &str) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("simulate: cannot write the report: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{args, quota_from_flags, report, Command};

    /// README.md shows the start and the end of the first workload's table: each line it
    /// shows (but the `...` between) is a line this example prints with no flags.
    #[test]
    fn the_readme_shows_what_it_prints() {
        let readme = include_str!("../../README.md");
        let shown = readme
            .split("```text\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .expect("README.md shows this example's output in a text block");
        let Ok(Command::Run(options)) = args::parse(Vec::new()) else {
            panic!("no flags: a run");
        };
        let printed = report(&options, &quota_from_flags(&options).unwrap());
        for line in shown.lines().filter(|line| line.trim() != "...") {
            assert!(
                printed.lines().any(|p| p == line),
                "README.md shows a line this example does not print: {line:?}"
            );
        }
    }
}
