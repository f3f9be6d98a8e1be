//! Policing versus shaping: 20 requests sent back to back to a limiter of 5 per second with a
//! burst of 2.
//!
//! - Policing (`check_n`) answers at once: the burst is served, the rest is denied with the
//!   time after which a retry would pass (an HTTP 429 with `Retry-After`).
//! - Shaping books every request a slot instead (`reserve`), one emission interval (200 ms)
//!   after the one before, and `wait` sleeps until that slot: all 20 are served, the first
//!   two at once and the last about 3.6 s in, in the order they asked.
//!
//! Run with `cargo run --release --example shaping` (the times are real: about 3.6 s).

use cellrate::{Clock, Limiter, Quota};
use std::time::{Duration, Instant};

/// How many requests each part sends, back to back.
const REQUESTS: u32 = 20;
/// The limit: tokens per second, and how many can be saved up.
const PER_SECOND: u32 = 5;
const BURST: u32 = 2;
/// The longest a shaped request agrees to wait for its slot.
const MAX_WAIT: Duration = Duration::from_secs(10);

fn limiter() -> Limiter {
    Limiter::new(Quota::per_second(PER_SECOND).with_burst(BURST))
}

fn main() {
    let interval = limiter().quota().emission_interval().as_millis();
    println!(
        "{REQUESTS} requests back to back; {PER_SECOND}/s, burst {BURST}, one per {interval} ms"
    );
    police();
    plan();
    shape();
}

/// Policing: a yes or no at once for each request.
fn police() {
    println!("\nPolicing with check_n: what does not fit is denied");
    let limiter = limiter();
    let start = Instant::now();
    let mut served = 0;
    for request in 1..=REQUESTS {
        let verdict = match limiter.check_n(1) {
            Ok(allowed) => {
                served += 1;
                format!("served ({} left)", allowed.remaining())
            }
            Err(denied) => match denied.retry_after() {
                Some(wait) => format!("denied, retry after {}", ms(wait)),
                None => "denied for good".to_string(),
            },
        };
        println!("  {} request {request:>2}: {verdict}", ms(start.elapsed()));
    }
    println!("  served {served} of {REQUESTS}");
}

/// Shaping, step one: every request books its slot at once; nothing sleeps yet.
fn plan() {
    println!("\nShaping, the plan: reserve books each request a slot (nothing waits yet)");
    let limiter = limiter();
    // One clock reading for the whole batch: each slot is then exact.
    let now = limiter.clock().now();
    let slots: Vec<String> = (0..REQUESTS)
        .map(|_| match limiter.at(now).reserve(1, MAX_WAIT) {
            Ok(reservation) => reservation
                .ready_at()
                .saturating_duration_since(now)
                .as_millis()
                .to_string(),
            Err(denied) => format!("denied: {denied}"),
        })
        .collect();
    println!("  slots, ms from now: {}", slots.join(" "));
}

/// Shaping, for real: `wait` books a slot and sleeps until it comes.
fn shape() {
    println!("\nShaping with wait: every request is served, one slot after the other");
    let limiter = limiter();
    let start = Instant::now();
    let mut previous: Option<Duration> = None;
    for request in 1..=REQUESTS {
        let sent = start.elapsed();
        match limiter.wait(1, MAX_WAIT) {
            Ok(_) => {
                let served = start.elapsed();
                let gap = previous.map_or_else(String::new, |p| format!("  (+{})", ms(served - p)));
                println!(
                    "  {} request {request:>2}: served after waiting {}{gap}",
                    ms(served),
                    ms(served - sent),
                );
                previous = Some(served);
            }
            Err(denied) => println!("  {} request {request:>2}: {denied}", ms(sent)),
        }
    }
    let total = ms(start.elapsed());
    println!("  served {REQUESTS} of {REQUESTS} in {total}");
}

/// A duration in milliseconds with one decimal, right-aligned.
fn ms(d: Duration) -> String {
    format!("{:7.1} ms", d.as_secs_f64() * 1e3)
}
