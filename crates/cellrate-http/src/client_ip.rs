//! `ClientIp`: the client's address as a key, behind trusted proxies or not, IPv6 by prefix.

use super::forwarded::{hops_from_right, ProxyHeader};
use super::key::{KeyError, KeyExtractor, RequestHead};
use ipnet::IpNet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The client's IP address, as the key of a per-client limit.
///
/// - **Peer address**: the first of axum's `ConnectInfo<SocketAddr>` (feature `axum`; serve
///   with `into_make_service_with_connect_info::<SocketAddr>()`), tonic's `TcpConnectInfo`
///   (feature `tonic`; a server on TLS or a socket of its own: insert the `SocketAddr`) and a
///   `SocketAddr` request extension (what a hyper server loop inserts) that the request
///   carries. Without one there is no key ([`KeyError::NoPeerAddress`]).
/// - **Trusted proxies**: only when the peer is in one of [`trust_proxies`](Self::trust_proxies)'
///   networks is the [`ProxyHeader`] paired with that network read, from the right: the hop
///   found there is the address that proxy received the request from. A hop that is itself
///   trusted is another proxy, and the walk goes on in the header *that* hop's networks are
///   paired with, from where the walk last left that header: a fleet of a CDN writing
///   `Forwarded` behind a load balancer writing `X-Forwarded-For` is read through both, and a
///   header a hop only passed on is never read past it. The first untrusted hop is the client;
///   a trusted hop whose header holds no more entries is the client itself (so a chain of
///   trusted hops ends at its leftmost). Entries left of the client are whatever the client
///   wrote, and never read; headers from an untrusted peer are ignored. A hop a trusted proxy wrote that names no
///   address (`unknown`, an obfuscated `_id`, garbage) leaves the request without a key
///   ([`KeyError::InvalidHeader`], which [`MissingKey::Skip`](super::MissingKey::Skip) never
///   skips). The layer fails closed on forms it does not parse, though a proxy may write them:
///   an IPv6 zone id (`fe80::1%eth0`), an empty list entry (`1.2.3.4,,`), an IPv4 address
///   with leading zeros (`010.1.1.1`, which some parsers read as octal).
/// - **Networks**: a trusted network written as IPv4-mapped IPv6 (`::ffff:10.0.0.0/104`)
///   matches the IPv4 peers it maps.
/// - **Prefixes**: one IPv6 client usually owns a whole prefix (a /56 or /64 per customer is
///   common) and can pick a new address per request, so IPv6 is keyed by its first 56 bits by
///   default; IPv4 by the whole address. IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`, what a
///   dual-stack socket reports) are keyed as the IPv4 address they carry.
///
/// The key is the address with its host bits zeroed ([`key_of`](Self::key_of), for an
/// extractor of one's own).
#[derive(Clone, Debug)]
pub struct ClientIp {
    /// Each trusted network with the header its proxies write.
    trusted: Vec<(IpNet, ProxyHeader)>,
    v4_prefix: u8,
    v6_prefix: u8,
}

impl Default for ClientIp {
    fn default() -> Self {
        ClientIp::new()
    }
}

impl ClientIp {
    /// The peer's address, no proxy trusted; IPv6 by /56, IPv4 by address.
    pub fn new() -> ClientIp {
        ClientIp {
            trusted: Vec::new(),
            v4_prefix: 32,
            v6_prefix: 56,
        }
    }

    /// Trusts the proxies in `networks` to write `header` truthfully. Each call pairs its
    /// networks with its own header: a peer in `networks`, or a hop that names one, has
    /// `header` read, whatever later calls trust. (A network given twice keeps the header of
    /// the first call.)
    pub fn trust_proxies(
        mut self,
        networks: impl IntoIterator<Item = IpNet>,
        header: ProxyHeader,
    ) -> ClientIp {
        self.trusted
            .extend(networks.into_iter().map(|net| (net, header)));
        self
    }

    /// Keys IPv6 clients by their first `bits` bits (default 56; 128 keys each address).
    ///
    /// # Panics
    /// If `bits` is 0 (every client in one bucket: use a global limit) or above 128.
    pub fn ipv6_prefix(mut self, bits: u8) -> ClientIp {
        assert!(
            (1..=128).contains(&bits),
            "ClientIp::ipv6_prefix({bits}): the prefix must be 1 to 128 bits"
        );
        self.v6_prefix = bits;
        self
    }

    /// Keys IPv4 clients by their first `bits` bits (default 32: each address).
    ///
    /// # Panics
    /// If `bits` is 0 or above 32.
    pub fn ipv4_prefix(mut self, bits: u8) -> ClientIp {
        assert!(
            (1..=32).contains(&bits),
            "ClientIp::ipv4_prefix({bits}): the prefix must be 1 to 32 bits"
        );
        self.v4_prefix = bits;
        self
    }

    /// The client's address (before the prefix is applied) for a request from `peer`.
    pub fn client_address(&self, peer: IpAddr, req: &RequestHead<'_>) -> Result<IpAddr, KeyError> {
        // Where the walk is in each header: each proxy recorded exactly one hop, the last
        // entry of its header when it passed the request on, so the hops of one header are
        // met in the order they were written, right to left, whatever other headers the walk
        // crosses in between.
        let mut walks = [None, None, None];
        let mut hop = canonical(peer);
        while let Some(header) = self.header_of(hop) {
            let walk = &mut walks[match header {
                ProxyHeader::XForwardedFor => 0,
                ProxyHeader::Forwarded => 1,
                ProxyHeader::XRealIp => 2,
            }];
            match walk
                .get_or_insert_with(|| hops_from_right(req.headers, header))
                .next()
            {
                // The trusted proxy recorded no hop: it is the client.
                None => break,
                Some(None) => return Err(KeyError::InvalidHeader(header.name())),
                Some(Some(ip)) => hop = canonical(ip),
            }
        }
        Ok(hop)
    }

    /// The header of the first trusted network that holds `ip` (canonical), if any. An IPv4
    /// address is also looked for as IPv4-mapped IPv6, the way a network may be written.
    fn header_of(&self, ip: IpAddr) -> Option<ProxyHeader> {
        let mapped = match ip {
            IpAddr::V4(v4) => Some(IpAddr::V6(v4.to_ipv6_mapped())),
            IpAddr::V6(_) => None,
        };
        self.trusted
            .iter()
            .find(|(net, _)| net.contains(&ip) || mapped.is_some_and(|m| net.contains(&m)))
            .map(|(_, header)| *header)
    }

    /// The key of the client address `ip`: IPv4-mapped IPv6 as the IPv4 address it carries,
    /// then the host bits past the prefix zeroed. For an extractor of one's own that finds
    /// the address elsewhere.
    pub fn key_of(&self, ip: IpAddr) -> IpAddr {
        self.masked(canonical(ip))
    }

    /// `ip` with its host bits zeroed.
    #[inline]
    fn masked(&self, ip: IpAddr) -> IpAddr {
        match ip {
            IpAddr::V4(v4) => self.masked_v4(v4),
            IpAddr::V6(v6) => self.masked_v6(v6),
        }
    }

    /// `v4` with its host bits zeroed.
    #[inline]
    fn masked_v4(&self, v4: Ipv4Addr) -> IpAddr {
        let mask = u32::MAX << (32 - u32::from(self.v4_prefix));
        IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask))
    }

    /// `v6` with its host bits zeroed.
    #[inline]
    fn masked_v6(&self, v6: Ipv6Addr) -> IpAddr {
        let mask = u128::MAX << (128 - u32::from(self.v6_prefix));
        IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
    }

    /// The key of an IPv6 peer with no proxy to ask. Out of line, and so is the proxies' walk:
    /// inlined, their instructions sat among those of an IPv4 check and spread it over more
    /// cache lines of code (`benches/http.rs`, callgrind).
    #[inline(never)]
    fn key_of_v6_peer(&self, v6: Ipv6Addr) -> IpAddr {
        match v6.to_ipv4_mapped() {
            Some(v4) => self.masked_v4(v4),
            None => self.masked_v6(v6),
        }
    }

    /// The key of a request from `peer` through the trusted proxies.
    #[inline(never)]
    fn key_behind_proxies(&self, peer: IpAddr, req: &RequestHead<'_>) -> Result<IpAddr, KeyError> {
        self.client_address(peer, req)
            .map(|client| self.masked(client))
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it carries; any other as it is.
#[inline]
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The peer address the server recorded in the request: axum's `ConnectInfo` (feature `axum`),
/// tonic's `TcpConnectInfo` (feature `tonic`), or a `SocketAddr`.
#[inline]
pub(crate) fn peer_address(req: &RequestHead<'_>) -> Option<SocketAddr> {
    if let Some(peer) = connect_info(req) {
        return Some(*peer);
    }
    #[cfg(feature = "tonic")]
    if let Some(info) = req
        .extensions
        .get::<tonic::transport::server::TcpConnectInfo>()
    {
        return info.remote_addr();
    }
    plain_peer_address(req)
}

/// The peer address in axum's `ConnectInfo`, by reference: read in place, an IPv4 peer's key
/// is its four bytes, not a copy of the whole socket address.
#[inline(always)]
fn connect_info<'a>(req: &RequestHead<'a>) -> Option<&'a SocketAddr> {
    #[cfg(feature = "axum")]
    return req
        .extensions
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|info| &info.0);
    #[cfg(not(feature = "axum"))]
    {
        let _ = req;
        None
    }
}

/// A peer address stored as a plain `SocketAddr`. Out of line, so that with `axum` its
/// look-up does not sit between the instructions of the `ConnectInfo` one and those after.
#[inline(never)]
fn plain_peer_address(req: &RequestHead<'_>) -> Option<SocketAddr> {
    req.extensions.get::<SocketAddr>().copied()
}

impl ClientIp {
    /// The key of a request [`extract`](KeyExtractor::extract) does not settle inline: a
    /// trusted proxy to ask, an IPv6 peer, a peer address that is not axum's. Out of line:
    /// its cases would spread the common one over more cache lines.
    #[inline(never)]
    fn key_of_request(&self, req: &RequestHead<'_>) -> Result<IpAddr, KeyError> {
        let peer = peer_address(req).ok_or(KeyError::NoPeerAddress)?;
        if !self.trusted.is_empty() {
            return self.key_behind_proxies(peer.ip(), req);
        }
        // No proxy to ask: the peer is the client.
        Ok(match peer {
            SocketAddr::V4(v4) => self.masked_v4(*v4.ip()),
            SocketAddr::V6(v6) => self.key_of_v6_peer(*v6.ip()),
        })
    }
}

impl KeyExtractor for ClientIp {
    type Key = IpAddr;

    // Always: out of line, its result came back through memory (http bench, cellrate_no_headers).
    #[inline(always)]
    fn extract(&self, req: &RequestHead<'_>) -> Result<IpAddr, KeyError> {
        // The common request: an IPv4 peer in axum's `ConnectInfo`, no proxy to ask.
        if self.trusted.is_empty() {
            if let Some(SocketAddr::V4(v4)) = connect_info(req) {
                return Ok(self.masked_v4(*v4.ip()));
            }
        }
        self.key_of_request(req)
    }
}
