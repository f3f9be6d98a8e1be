//! `rediss://` against real redis-servers listening with TLS, with certificates made at test
//! time: one server (with and without client certificates) and a 3-node Cluster whose nodes
//! talk TLS and announce their TLS ports.

use crate::cluster;
use crate::redis_support;
use crate::tls;

use cellrate::Quota;
use cellrate_redis::{Error, RedisLimiter, RedisOptions};
use cluster::RedisCluster;
use redis_support::runtime;
use std::time::Duration;
use tls::Certs;

/// Options that trust the test's CA, with room for a TLS handshake on a busy machine (timing is
/// not what these tests check).
fn trusting(certs: &Certs) -> RedisOptions {
    RedisOptions::default()
        .tls_root_certificates(certs.read("ca.crt"))
        .connection_timeout(Duration::from_secs(3))
        .deadline(Duration::from_secs(3))
}

#[test]
fn redis_tls_a_single_server() {
    let Some(certs) = Certs::make("redis_tls_a_single_server", "single") else {
        return;
    };
    let Some((server, port)) = tls::tls_server("redis_tls_a_single_server", &certs, false) else {
        return;
    };
    let rt = runtime();
    let quota = Quota::per_hour(2);
    let limiter = rt
        .block_on(RedisLimiter::connect_with(
            &tls::url(port),
            quota,
            trusting(&certs),
        ))
        .unwrap();
    assert!(rt.block_on(limiter.check_key("k")).is_ok());
    assert!(rt.block_on(limiter.check_key("k")).is_ok());
    assert!(rt.block_on(limiter.check_key("k")).is_err());
    let stored: Option<String> = server.query(redis::cmd("GET").arg("cellrate:k")).unwrap();
    assert!(stored.is_some(), "decided over TLS on this server");
    // A certificate that chains to no trusted root: no connection.
    let err = rt
        .block_on(RedisLimiter::connect_with(
            &tls::url(port),
            quota,
            RedisOptions::default(),
        ))
        .unwrap_err();
    assert!(matches!(err, Error::Unavailable(_)), "{err:?}");
}

#[test]
fn redis_tls_with_client_certificates() {
    let Some(certs) = Certs::make("redis_tls_with_client_certificates", "mutual") else {
        return;
    };
    let Some((_server, port)) = tls::tls_server("redis_tls_with_client_certs", &certs, true) else {
        return;
    };
    let rt = runtime();
    let quota = Quota::per_hour(2);
    let anonymous = rt.block_on(RedisLimiter::connect_with(
        &tls::url(port),
        quota,
        trusting(&certs),
    ));
    assert!(
        anonymous.is_err(),
        "the server asks for a client certificate"
    );
    let options =
        trusting(&certs).tls_client_identity(certs.read("client.crt"), certs.read("client.key"));
    let limiter = rt
        .block_on(RedisLimiter::connect_with(&tls::url(port), quota, options))
        .unwrap();
    assert!(rt.block_on(limiter.check_key("k")).is_ok());
    let debug = format!("{:?}", limiter.options());
    assert!(
        debug.contains("<redacted>") && !debug.contains("PRIVATE KEY"),
        "{debug}"
    );
}

#[test]
fn redis_tls_a_cluster() {
    let Some(certs) = Certs::make("redis_tls_a_cluster", "cluster") else {
        return;
    };
    let ports: Vec<u16> = (0..3).map(|_| redis_support::free_port()).collect();
    let extra = |i: usize| {
        let mut args = certs.server_args(ports[i], false);
        args.extend(["--tls-cluster", "yes", "--tls-replication", "yes"].map(String::from));
        args
    };
    let ca = certs.path("ca.crt");
    let cli = ["--tls", "--cacert", ca.as_str()];
    let tls_port = |n: &redis_support::RedisServer| n.arg("--tls-port").unwrap().parse().unwrap();
    let Some(cluster) = RedisCluster::start_with("redis_tls_a_cluster", extra, &cli, tls_port)
    else {
        return;
    };
    let rt = runtime();
    let seed = tls::url(ports[0]);
    let limiter = rt
        .block_on(RedisLimiter::connect_cluster(
            &[&seed],
            Quota::per_hour(1),
            trusting(&certs),
        ))
        .unwrap();
    let keys: Vec<String> = (0..30).map(|i| format!("user{i}")).collect();
    let requests: Vec<(&str, u32)> = keys.iter().map(|k| (k.as_str(), 1)).collect();
    let first = rt.block_on(limiter.check_many(&requests));
    assert!(first.iter().all(Result::is_ok), "{first:?}");
    let again = rt.block_on(limiter.check_many(&requests));
    assert!(again.iter().all(Result::is_err), "{again:?}");
    // The keys are spread over the three nodes, each reached over TLS.
    let spread: Vec<usize> = keys
        .iter()
        .map(|k| cluster.node_of(&format!("cellrate:{k}")))
        .collect();
    for node in 0..3 {
        assert!(spread.contains(&node), "{spread:?}");
    }
    assert_eq!(limiter.stats().allowed, 30);
}
