//! Command-line flags of the `simulate` example, parsed by hand from `std::env::args`.
//!
//! Every malformed flag becomes a [`UsageError`] with a message naming the flag; nothing here
//! panics on user input.

use std::fmt;

const NANOS_PER_SECOND: f64 = 1e9;
/// The longest gap `--gap` accepts, in seconds (one hour).
const MAX_GAP_SECONDS: f64 = 3600.0;
/// The most requests `--count` accepts per workload.
const MAX_COUNT: u32 = 10_000;

/// The help text printed by `--help` and after a bad flag.
pub const USAGE: &str = "\
Replays the token-bucket guide's workloads through cellrate::Limiter on a ManualClock.

usage: cargo run --release --example simulate -- [FLAGS]

flags:
  --workload NAME   burst | steady | flood | all (default: all)
                      burst:   9 requests, 0.15 s apart
                      steady: 20 requests, 0.6 s apart
                      flood:  48 requests, 0.25 s apart
  --rate N          tokens earned per second, 0 < N (default: 2); a rate that does not
                    divide a second is rounded down: one token every ceil(1e9 / N) ns
  --burst N         bucket capacity in tokens, 0 < N (default: 6)
  --gap SECONDS     time between requests, 0 to 3600, e.g. 0.25 (needs a single workload)
  --count N         requests per workload, 1 to 10000
  --width N         chart columns, 10 to 1000 (default: 60)
  --height N        chart rows, 2 to 100 (default: 12)
  -h, --help        print this help

Flags also take the form --flag=VALUE. Exit status: 0 on success, 2 on a bad flag or an
invalid quota.
";

/// One of the guide's three request patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Nine requests in 1.2 s: saved tokens absorb the burst.
    Burst,
    /// One request every 0.6 s: under the refill rate, never denied.
    Steady,
    /// One request every 0.25 s: twice the refill rate, drains the bucket.
    Flood,
}

impl Workload {
    /// All three, in the guide's order.
    pub const ALL: [Workload; 3] = [Workload::Burst, Workload::Steady, Workload::Flood];

    /// The name used by `--workload` and in the output.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Burst => "burst",
            Workload::Steady => "steady",
            Workload::Flood => "flood",
        }
    }

    /// The guide's time between two requests, in nanoseconds.
    pub fn default_gap_ns(self) -> u64 {
        match self {
            Workload::Burst => 150_000_000,
            Workload::Steady => 600_000_000,
            Workload::Flood => 250_000_000,
        }
    }

    /// How many requests to send by default: the guide's nine for the burst, and enough to
    /// fill its twelve-second chart for the others.
    pub fn default_count(self) -> u32 {
        match self {
            Workload::Burst => 9,
            Workload::Steady => 20,
            Workload::Flood => 48,
        }
    }
}

/// What to simulate, as the flags asked.
#[derive(Clone, Debug)]
pub struct Options {
    /// The workloads to replay, in order.
    pub workloads: Vec<Workload>,
    /// Tokens per second (`--rate`); zero is left for `Quota::try_per_second` to reject.
    pub rate: u32,
    /// Capacity (`--burst`); zero is left for `Quota::try_with_burst` to reject.
    pub burst: u32,
    /// `--gap` in whole nanoseconds, if given.
    pub gap_ns: Option<u64>,
    /// `--count`, if given.
    pub count: Option<u32>,
    /// Chart columns.
    pub width: usize,
    /// Chart rows.
    pub height: usize,
}

/// The result of a successful parse.
#[derive(Debug)]
pub enum Command {
    /// Run the simulation.
    Run(Options),
    /// Print [`USAGE`] and stop.
    Help,
}

/// A flag that could not be understood; its message names the flag and what was wrong.
#[derive(Debug)]
pub struct UsageError(String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Parses the arguments after the program name.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, UsageError> {
    let mut options = Options {
        workloads: Workload::ALL.to_vec(),
        rate: 2,
        burst: 6,
        gap_ns: None,
        count: None,
        width: 60,
        height: 12,
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "-h" || arg == "--help" {
            return Ok(Command::Help);
        }
        let (flag, inline_value) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag.to_string(), Some(value)),
            _ => (arg.clone(), None),
        };
        if !flag.starts_with('-') {
            return Err(UsageError(format!("unexpected argument '{arg}'")));
        }
        let known = [
            "--workload",
            "--rate",
            "--burst",
            "--gap",
            "--count",
            "--width",
            "--height",
        ];
        if !known.contains(&flag.as_str()) {
            return Err(UsageError(format!("unknown flag '{flag}'")));
        }
        let value = match inline_value {
            Some(value) => value.to_string(),
            None => args
                .next()
                .ok_or_else(|| UsageError(format!("{flag} needs a value")))?,
        };
        match flag.as_str() {
            "--workload" => options.workloads = parse_workloads(&value)?,
            "--rate" => options.rate = parse_whole(&flag, &value, 0, u32::MAX)?,
            "--burst" => options.burst = parse_whole(&flag, &value, 0, u32::MAX)?,
            "--gap" => options.gap_ns = Some(parse_gap_ns(&value)?),
            "--count" => options.count = Some(parse_whole(&flag, &value, 1, MAX_COUNT)?),
            "--width" => options.width = parse_whole(&flag, &value, 10, 1000)? as usize,
            _ => options.height = parse_whole(&flag, &value, 2, 100)? as usize,
        }
    }
    if options.gap_ns.is_some() && options.workloads.len() > 1 {
        return Err(UsageError(
            "--gap needs a single --workload (burst, steady or flood): \
             the three workloads differ only by their gap"
                .to_string(),
        ));
    }
    Ok(Command::Run(options))
}

fn parse_workloads(value: &str) -> Result<Vec<Workload>, UsageError> {
    if value == "all" {
        return Ok(Workload::ALL.to_vec());
    }
    Workload::ALL
        .into_iter()
        .find(|w| w.name() == value)
        .map(|w| vec![w])
        .ok_or_else(|| {
            UsageError(format!(
                "--workload: '{value}' is not one of burst, steady, flood, all"
            ))
        })
}

fn parse_whole(flag: &str, value: &str, min: u32, max: u32) -> Result<u32, UsageError> {
    match value.parse::<u32>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ if min == 0 => Err(UsageError(format!(
            "{flag}: '{value}' is not a whole number up to {max}"
        ))),
        _ => Err(UsageError(format!(
            "{flag}: '{value}' is not a whole number from {min} to {max}"
        ))),
    }
}

/// Parses seconds as a float once and rounds them to whole nanoseconds; everything after this
/// is integer arithmetic.
fn parse_gap_ns(value: &str) -> Result<u64, UsageError> {
    match value.parse::<f64>() {
        Ok(seconds) if (0.0..=MAX_GAP_SECONDS).contains(&seconds) => {
            // 0 <= seconds * 1e9 <= 3.6e12: the cast cannot saturate.
            Ok((seconds * NANOS_PER_SECOND).round() as u64)
        }
        _ => Err(UsageError(format!(
            "--gap: '{value}' is not a number of seconds from 0 to {MAX_GAP_SECONDS}"
        ))),
    }
}
