//! A real axum server on a loopback port and a real HTTP/1 client (hyper-util's) for the HTTP
//! tests.
#![allow(dead_code)] // each test file uses a different part of it

pub mod logs;

use axum::Router;
use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use std::net::SocketAddr;

/// Serves `app` on a free port of 127.0.0.1, with the peer address as `ConnectInfo` when
/// `connect_info`; the server runs until the test's runtime ends.
pub async fn serve(app: Router, connect_info: bool) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        if connect_info {
            let service = app.into_make_service_with_connect_info::<SocketAddr>();
            axum::serve(listener, service).await.unwrap();
        } else {
            axum::serve(listener, app).await.unwrap();
        }
    });
    addr
}

/// A response, read whole.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }
}

pub struct HttpClient {
    client: Client<HttpConnector, Empty<Bytes>>,
    base: String,
}

impl HttpClient {
    pub fn new(addr: SocketAddr) -> HttpClient {
        HttpClient {
            client: Client::builder(TokioExecutor::new()).build_http(),
            base: format!("http://{addr}"),
        }
    }

    /// A client whose connections leave from `local` (a loopback address such as 127.0.0.2),
    /// so that the server sees it as a peer of its own.
    pub fn bound(addr: SocketAddr, local: std::net::IpAddr) -> HttpClient {
        let mut connector = HttpConnector::new();
        connector.set_local_address(Some(local));
        HttpClient {
            client: Client::builder(TokioExecutor::new()).build(connector),
            base: format!("http://{addr}"),
        }
    }

    /// GET `path` with `headers`.
    pub async fn get(&self, path: &str, headers: &[(&str, &str)]) -> Answer {
        let mut req = Request::get(format!("{}{path}", self.base));
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let response = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            self.client.request(req.body(Empty::new()).unwrap()),
        )
        .await
        .expect("an answer within 10 s")
        .expect("a response");
        let (parts, body) = response.into_parts();
        let body = body.collect().await.unwrap().to_bytes();
        Answer {
            status: parts.status,
            headers: parts.headers,
            body: String::from_utf8(body.to_vec()).unwrap(),
        }
    }

    /// GET `path`, or the error of a request that got no response (the server hung up).
    pub async fn try_get(&self, path: &str) -> Result<StatusCode, String> {
        let req = Request::get(format!("{}{path}", self.base)).body(Empty::new());
        let response = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            self.client.request(req.unwrap()),
        )
        .await
        .expect("an answer within 10 s");
        response.map(|r| r.status()).map_err(|e| e.to_string())
    }

    /// GET `path` as the client `ip`, through a proxy that appends it to X-Forwarded-For.
    pub async fn get_as(&self, path: &str, ip: &str) -> Answer {
        self.get(path, &[("x-forwarded-for", ip)]).await
    }
}

/// The `RateLimit` or `RateLimit-Policy` field parsed as an RFC 9651 list: per item, its
/// string and its integer parameters in order.
pub fn parse_list(value: &str) -> Vec<(String, Vec<(String, i64)>)> {
    let list: sfv::List = sfv::Parser::new(value)
        .parse()
        .unwrap_or_else(|e| panic!("{value:?} is not an RFC 9651 list: {e}"));
    list.into_iter()
        .map(|entry| match entry {
            sfv::ListEntry::Item(item) => {
                let name = item.bare_item.as_string().expect("a string item").as_str();
                let params = item
                    .params
                    .iter()
                    .filter_map(|(k, v)| v.as_integer().map(|i| (k.as_str().into(), i64::from(i))))
                    .collect();
                (name.to_owned(), params)
            }
            other => panic!("an inner list in {value:?}: {other:?}"),
        })
        .collect()
}

/// `(name, r, t)` of each `RateLimit` item.
pub fn ratelimit(answer: &Answer) -> Vec<(String, i64, i64)> {
    let value = answer.header("ratelimit").expect("a RateLimit field");
    parse_list(value)
        .into_iter()
        .map(|(name, params)| {
            let get = |k: &str| params.iter().find(|(n, _)| n == k).expect(k).1;
            (name, get("r"), get("t"))
        })
        .collect()
}
