//! Sentinel: the redis client's `SentinelClient`, asked for the current primary at every
//! connection attempt.

use super::connector::Connector;
use super::error::Error;
use super::options::RedisOptions;
use redis::sentinel::{SentinelClientBuilder, SentinelServerType};
use redis::{ConnectionAddr, ConnectionInfo, IntoConnectionInfo, TlsMode};

/// A connector to the primary of `service` as the Sentinels at `sentinels` name it. The
/// Sentinels' own credentials and TLS come from the first of their URLs; the primary's from
/// `primary` (its host and port unused).
pub(crate) fn connector(
    sentinels: &[&str],
    service: &str,
    primary: &str,
    options: &RedisOptions,
) -> Result<Connector, Error> {
    let infos = sentinels
        .iter()
        .map(|url| url.into_connection_info())
        .collect::<Result<Vec<ConnectionInfo>, _>>()?;
    let Some(first) = infos.first() else {
        return Err(Error::InvalidOptions(
            "no Sentinel address given".to_owned(),
        ));
    };
    let primary = primary.into_connection_info()?;
    let addrs = infos.iter().map(|info| info.addr().clone());
    let mut builder = SentinelClientBuilder::new(addrs, service, SentinelServerType::Master)?;
    let own = first.redis_settings();
    if let Some(user) = own.username() {
        builder = builder.set_client_to_sentinel_username(user);
    }
    if let Some(password) = own.password() {
        builder = builder.set_client_to_sentinel_password(password);
    }
    if matches!(first.addr(), ConnectionAddr::TcpTls { .. }) {
        builder = builder.set_client_to_sentinel_tls_mode(TlsMode::Secure);
        if let Some(certificates) = options.tls_certificates() {
            builder = builder.set_client_to_sentinel_certificates(certificates);
        }
    }
    let theirs = primary.redis_settings();
    if let Some(user) = theirs.username() {
        builder = builder.set_client_to_redis_username(user);
    }
    if let Some(password) = theirs.password() {
        builder = builder.set_client_to_redis_password(password);
    }
    builder = builder.set_client_to_redis_db(theirs.db());
    if matches!(primary.addr(), ConnectionAddr::TcpTls { .. }) {
        builder = builder.set_client_to_redis_tls_mode(TlsMode::Secure);
        if let Some(certificates) = options.tls_certificates() {
            builder = builder.set_client_to_redis_certificates(certificates);
        }
    }
    Ok(Connector::sentinel(builder.build()?, service))
}
