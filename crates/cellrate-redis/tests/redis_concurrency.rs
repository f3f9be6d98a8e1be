//! Many tasks on one Redis key, through separate connections and one shared one, single and
//! batched: together they are admitted exactly the burst, never more.

use crate::redis_support;

use cellrate::Quota;
use cellrate_redis::{RedisLimiter, RedisOptions};
use redis_support::{runtime, RedisServer};
use std::time::Duration;

#[test]
fn redis_eight_tasks_on_one_key_never_over_admit() {
    let Some(server) = RedisServer::start("redis_eight_tasks_on_one_key") else {
        return;
    };
    let rt = runtime();
    // 40 tokens and then one an hour: every admission within the test comes from the burst.
    let quota = Quota::per_hour(1).with_burst(40);
    let options = RedisOptions::default().deadline(Duration::from_secs(5));
    let shared = rt
        .block_on(RedisLimiter::connect_with(
            &server.url(),
            quota,
            options.clone(),
        ))
        .unwrap();
    let admitted: u64 = rt.block_on(async {
        let mut tasks = Vec::new();
        for task in 0..8 {
            // Half the tasks have a connection of their own, half share one.
            let limiter = if task % 2 == 0 {
                RedisLimiter::connect_with(&server.url(), quota, options.clone())
                    .await
                    .unwrap()
            } else {
                shared.clone()
            };
            tasks.push(tokio::spawn(async move {
                let mut admitted = 0u64;
                for round in 0..25u32 {
                    let cost = 1 + (task + round) % 3;
                    if round % 5 == 0 {
                        let batch = limiter.check_many(&[("hot", cost), ("hot", 1)]).await;
                        for (answer, c) in batch.iter().zip([cost, 1]) {
                            admitted += u64::from(c) * u64::from(answer.is_ok());
                        }
                    } else if limiter.check_key_n("hot", cost).await.is_ok() {
                        admitted += u64::from(cost);
                    }
                }
                let stats = limiter.stats();
                assert_eq!(stats.failed_open + stats.failed_closed, 0, "{stats:?}");
                admitted
            }));
        }
        let mut total = 0;
        for task in tasks {
            total += task.await.unwrap();
        }
        total
    });
    // Every token was asked for many times over: exactly the burst was handed out.
    assert_eq!(admitted, 40);
    let left = rt
        .block_on(shared.check_key_n("hot", 0))
        .unwrap()
        .remaining();
    assert_eq!(left, 0);
}
