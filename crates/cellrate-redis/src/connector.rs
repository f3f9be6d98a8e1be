//! How a node gets a connection: to a fixed address (resolved again on every attempt), or to
//! the primary a Sentinel names at that moment. Either way the server must say it is a
//! primary before the connection is used, and its memory settings are read.

use super::memory::{read_settings, Read};
use redis::aio::MultiplexedConnection;
use redis::sentinel::SentinelClient;
use redis::{
    AsyncConnectionConfig, Client, ErrorKind, RedisError, RedisResult, ServerErrorKind, Value,
};
use std::time::Duration;

/// Where a node connects to.
pub(crate) struct Connector {
    /// `host:port`, or `sentinel:<service>`, for messages.
    addr: String,
    kind: Kind,
}

enum Kind {
    Fixed(Client),
    /// Locked: the client caches its connections to the Sentinels.
    Sentinel(tokio::sync::Mutex<SentinelClient>),
}

impl Connector {
    /// Connections to `client`'s address.
    pub(crate) fn fixed(client: Client) -> Connector {
        Connector {
            addr: client.get_connection_info().addr().to_string(),
            kind: Kind::Fixed(client),
        }
    }

    /// Connections to the primary `client`'s Sentinels name for `service`.
    pub(crate) fn sentinel(client: SentinelClient, service: &str) -> Connector {
        Connector {
            addr: format!("sentinel:{service}"),
            kind: Kind::Sentinel(tokio::sync::Mutex::new(client)),
        }
    }

    pub(crate) fn addr(&self) -> &str {
        &self.addr
    }

    /// A new connection, checked to be a primary's, and the server's memory settings. No
    /// response timeout of the client's own: the limiter's deadline is the only one, so every
    /// timeout is `Error::Timeout` and counts toward replacing the connection. The caller
    /// bounds the whole attempt.
    pub(crate) async fn connect(
        &self,
        timeout: Duration,
    ) -> RedisResult<(MultiplexedConnection, Read)> {
        let client = match &self.kind {
            Kind::Fixed(client) => client.clone(),
            Kind::Sentinel(sentinel) => sentinel.lock().await.async_get_client().await?,
        };
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(None);
        let mut conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await?;
        check_primary(&mut conn).await?;
        let memory = read_settings(&mut conn).await;
        Ok((conn, memory))
    }
}

/// `Ok` if the server says (`ROLE`) it is a primary; where `ROLE` is not allowed (an ACL, a
/// proxy), a `PING` answered.
async fn check_primary(conn: &mut MultiplexedConnection) -> RedisResult<()> {
    match redis::cmd("ROLE").query_async::<Value>(conn).await {
        Ok(Value::Array(items)) => match items.first() {
            Some(Value::BulkString(role)) if role == b"master" => Ok(()),
            Some(Value::BulkString(role)) => Err(RedisError::from((
                ErrorKind::Server(ServerErrorKind::ReadOnly),
                "the server is not a primary",
                format!("ROLE says {}", String::from_utf8_lossy(role)),
            ))),
            _ => Err(RedisError::from((
                ErrorKind::UnexpectedReturnType,
                "unexpected reply to ROLE",
            ))),
        },
        Ok(_) => Err(RedisError::from((
            ErrorKind::UnexpectedReturnType,
            "unexpected reply to ROLE",
        ))),
        Err(e)
            if e.kind() == ErrorKind::Server(ServerErrorKind::NoPerm)
                || e.kind() == ErrorKind::Server(ServerErrorKind::ResponseError) =>
        {
            redis::cmd("PING").query_async::<()>(conn).await
        }
        Err(e) => Err(e),
    }
}
