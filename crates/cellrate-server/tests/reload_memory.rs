//! A test binary of its own, so that the process's memory is this test's alone: reloads under
//! load: config files rewritten over a thousand times while clients call. No
//! call fails, a rule whose quota never changes keeps every bucket (on a frozen test clock
//! each key admits exactly its burst, however many reloads pass), a rule whose quota changes
//! gets fresh buckets, an invalid change keeps the last good config, and memory stays flat.

// The helpers of the integration binary; this binary uses some of them.
#[allow(dead_code)]
#[path = "support.rs"]
mod support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{descriptor, metric, request, write_atomically, Running};

const RELOADS: u64 = 1_000;
const BURST: u64 = 50;

fn version(i: u64) -> String {
    format!(
        "domain: load\ndescriptors:\n  - key: user\n    rate_limit: {{unit: hour, requests_per_unit: 1000, burst: {BURST}, name: steady}}\n  - key: churn\n    rate_limit: {{unit: second, requests_per_unit: {}, name: churn}}\n",
        5 + i % 7
    )
}

/// The process's virtual size and resident set, in KiB.
fn memory_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (field("VmSize:"), field("VmRSS:"))
}

async fn applied(s: &Running) -> u64 {
    let text = s.server.metrics_text();
    metric(&text, "cellrate_rls_reloads_total{result=\"applied\"}").unwrap_or(0.0) as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_reloads_under_load() {
    let s = Running::start(&[("load.yaml", &version(0))], |settings| {
        settings.reload_debounce_ms = 2;
        settings.max_keys = 20_000;
    })
    .await;
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = Vec::new();
    for c in 0..4 {
        let mut client = s.client.clone();
        let stop = stop.clone();
        clients.push(tokio::spawn(async move {
            let (mut admitted, mut calls) = (0u64, 0u64);
            let user = format!("u{c}");
            while !stop.load(Ordering::Relaxed) {
                let req = request("load", vec![descriptor(&[("user", &user)])], 0);
                let answer = client
                    .should_rate_limit(req)
                    .await
                    .expect("no call fails")
                    .into_inner();
                if answer.overall_code == 1 {
                    admitted += 1;
                }
                // The rule whose quota changes at every reload, decided on fresh tables.
                let req = request("load", vec![descriptor(&[("churn", &user)])], 0);
                client.should_rate_limit(req).await.expect("no call fails");
                calls += 2;
            }
            (admitted, calls)
        }));
    }
    let failed_before = AtomicU64::new(0);
    let mut memory_at_100 = (0, 0);
    let started = Instant::now();
    for i in 1..=RELOADS {
        if i % 100 == 50 {
            // An invalid change: refused, the last good config stays.
            write_atomically(
                &s.dir.0,
                "load.yaml",
                "domain: load\ndescriptors:\n  - key: user\n    rate_limit: {unit: fortnight}\n",
            );
            let want = failed_before.fetch_add(1, Ordering::Relaxed) + 1;
            wait_for(&s, "cellrate_rls_reloads_total{result=\"failed\"}", want).await;
        }
        write_atomically(&s.dir.0, "load.yaml", &version(i));
        let deadline = Instant::now() + Duration::from_secs(10);
        while applied(&s).await < i {
            assert!(Instant::now() < deadline, "reload {i} not applied");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        if i == 100 {
            memory_at_100 = memory_kib();
        }
    }
    stop.store(true, Ordering::Relaxed);
    let mut total_calls = 0;
    for client in clients {
        let (admitted, calls) = client.await.unwrap();
        assert_eq!(admitted, BURST, "a kept bucket admits its burst, once");
        total_calls += calls;
    }
    let memory_at_end = memory_kib();
    eprintln!(
        "{RELOADS} reloads in {:?} under {total_calls} calls; memory (VmSize, VmRSS) KiB at reload 100 {memory_at_100:?}, at the end {memory_at_end:?}",
        started.elapsed()
    );
    assert!(total_calls > 1_000, "{total_calls} calls");
    // Each reload makes a fresh table for `churn` (20,000 keys: 400 KiB of address space); a
    // leak of them would be 360 MiB over 900 reloads.
    assert!(
        memory_at_end.0 < memory_at_100.0 + 64 * 1024,
        "{memory_at_100:?} -> {memory_at_end:?}"
    );
    assert!(
        memory_at_end.1 < memory_at_100.1 + 32 * 1024,
        "{memory_at_100:?} -> {memory_at_end:?}"
    );
    assert_eq!(applied(&s).await, RELOADS);
    s.stop().await;
}

async fn wait_for(s: &Running, series: &str, want: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = s.server.metrics_text();
        if metric(&text, series).unwrap_or(0.0) as u64 >= want {
            return;
        }
        assert!(Instant::now() < deadline, "{series} never reached {want}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// A ConfigMap-style update: the files are links into `..data`, itself a link swapped to a new
/// directory.
#[tokio::test]
async fn a_symlink_swap_is_a_reload() {
    let s = Running::start(&[], |_| {}).await;
    let dir = &s.dir.0;
    let v1 = dir.join("..v1");
    std::fs::create_dir(&v1).unwrap();
    std::fs::write(v1.join("swap.yaml"), "domain: swap\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n").unwrap();
    std::os::unix::fs::symlink("..v1", dir.join("..data")).unwrap();
    std::os::unix::fs::symlink("..data/swap.yaml", dir.join("swap.yaml")).unwrap();
    wait_for(&s, "cellrate_rls_reloads_total{result=\"applied\"}", 1).await;
    let mut client = s.client.clone();
    let call = || request("swap", vec![descriptor(&[("k", "x")])], 0);
    let a = client.should_rate_limit(call()).await.unwrap().into_inner();
    assert_eq!(
        a.statuses[0]
            .current_limit
            .as_ref()
            .unwrap()
            .requests_per_unit,
        1
    );
    let v2 = dir.join("..v2");
    std::fs::create_dir(&v2).unwrap();
    std::fs::write(v2.join("swap.yaml"), "domain: swap\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 9}\n").unwrap();
    std::os::unix::fs::symlink("..v2", dir.join("..data_tmp")).unwrap();
    std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).unwrap();
    wait_for(&s, "cellrate_rls_reloads_total{result=\"applied\"}", 2).await;
    let a = client.should_rate_limit(call()).await.unwrap().into_inner();
    assert_eq!(
        a.statuses[0]
            .current_limit
            .as_ref()
            .unwrap()
            .requests_per_unit,
        9
    );
    s.stop().await;
}
