//! A per-user and a per-organisation limit shared by every server through Redis, decided
//! together (all or nothing), and a give-back when the work was not done.
//!
//! ```sh
//! redis-server --port 6379 &      # any Redis; this example starts nothing itself
//! cargo run --example redis_api_quota --features redis -- redis://127.0.0.1:6379
//! ```
//!
//! User 7 of organisation acme may make 5 requests per minute and the whole organisation 8;
//! both keys carry the hash tag `{acme}`, so on a Redis Cluster they share a slot (the
//! all-or-nothing script needs that). The example sends 7 requests for user 7 and 4 for user
//! 8, cancels one booking (the upstream call failed, say), and prints each key's own figures.
//! Run it twice within a minute to see the buckets shared across processes.

use cellrate::Quota;
use cellrate_redis::{FailurePolicy, RedisLimiter, RedisOptions};
use std::time::Duration;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .nth(1)
        .ok_or("usage: redis_api_quota redis://HOST:PORT")?;
    let per_user = Quota::per_minute(5);
    let per_org = Quota::per_minute(8);
    // Redis down: refuse rather than admit without a limit.
    let options = RedisOptions::default()
        .key_prefix("example:quota:")
        .deadline(Duration::from_millis(200))
        .failure_policy(FailurePolicy::FailClosed);
    let limiter = RedisLimiter::connect_with(&url, per_user, options).await?;

    let requests = [("7", 7), ("8", 4)];
    for (user, count) in requests {
        let user_key = format!("{{acme}}:user:{user}");
        let limits = [(user_key.as_str(), per_user), ("{acme}:org", per_org)];
        for i in 1..=count {
            match limiter.reserve_all_of_n(&limits, 1).await {
                Ok(booking) => {
                    let left: Vec<u32> = booking
                        .each()
                        .iter()
                        .map(|b| b.allowed().remaining())
                        .collect();
                    println!("user {user} #{i}: admitted, left (user, org) = {left:?}");
                    if i == 2 && user == "7" {
                        // The work failed: give both keys their token back.
                        booking.cancel().await?;
                        println!("user {user} #{i}: cancelled, tokens given back");
                    }
                }
                Err(denial) => {
                    let who: Vec<&str> = denial
                        .each()
                        .iter()
                        .zip(["user", "org"])
                        .filter_map(|(own, name)| own.is_err().then_some(name))
                        .collect();
                    let wait = denial.denied().retry_after().map(|d| d.as_secs_f64());
                    println!("user {user} #{i}: refused by {who:?}, retry after {wait:?} s");
                }
            }
        }
    }
    println!("stats: {:?}", limiter.stats());
    Ok(())
}
