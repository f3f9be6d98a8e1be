//! The headers proxies record the client's address in ([`ProxyHeader`]) and their hops, read
//! from the right (the nearest hop first): `X-Forwarded-For` entries, the `for=` node of RFC
//! 7239 `Forwarded` elements, and `X-Real-IP` lines.

use http::header::{HeaderName, HeaderValue, FORWARDED};
use http::HeaderMap;
use std::net::{IpAddr, SocketAddr};

/// The header a trusted proxy writes the client's address in. Name the one your proxies
/// write: a client can send the others itself, and a proxy that does not know them passes
/// them on unchanged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProxyHeader {
    /// `X-Forwarded-For: client, proxy1, proxy2`: each proxy appends the address it received
    /// the request from.
    #[default]
    XForwardedFor,
    /// RFC 7239 `Forwarded: for=client, for=proxy1`: the `for=` node of each element.
    Forwarded,
    /// `X-Real-IP: client`: one address per line, written by a proxy that either sets the
    /// header (one line left) or appends its own line (HAProxy's `add-header`, Envoy's
    /// `append`), after any the client sent. Its lines are read from the last: the last is
    /// the one the proxy next to the server wrote, the one before it the line of the next
    /// `X-Real-IP` proxy out, if the walk reaches one. A line that is not one address (a
    /// list, garbage) leaves the request without a key ([`KeyError::InvalidHeader`](super::KeyError::InvalidHeader)).
    XRealIp,
}

impl ProxyHeader {
    /// The header's name.
    pub(crate) fn name(self) -> HeaderName {
        match self {
            ProxyHeader::XForwardedFor => HeaderName::from_static("x-forwarded-for"),
            ProxyHeader::Forwarded => FORWARDED,
            ProxyHeader::XRealIp => HeaderName::from_static("x-real-ip"),
        }
    }
}

/// The hops recorded in `header`, from the last header line's last entry to the first's
/// first (an `X-Real-IP` line is one entry). An entry that is not valid text or names no
/// address is `None`.
pub(crate) fn hops_from_right(
    headers: &HeaderMap,
    header: ProxyHeader,
) -> impl Iterator<Item = Option<IpAddr>> + '_ {
    let lists = header != ProxyHeader::XRealIp;
    headers
        .get_all(header.name())
        .iter()
        .rev()
        .flat_map(move |line| entries_from_right(line, lists).map(move |e| parse_entry(e, header)))
}

/// A header line's comma-separated entries (`lists`; otherwise the whole line), last first,
/// without allocating. A comma inside a quoted string does not split; an escaped quote (`\"`)
/// does not open or close one.
fn entries_from_right(line: &HeaderValue, lists: bool) -> impl Iterator<Item = &[u8]> {
    let bytes = line.as_bytes();
    let mut end = Some(bytes.len());
    core::iter::from_fn(move || {
        let stop = end?;
        let mut quoted = false;
        let mut i = stop;
        while i > 0 {
            match bytes[i - 1] {
                b'"' if !(i >= 2 && bytes[i - 2] == b'\\') => quoted = !quoted,
                b',' if lists && !quoted => {
                    end = Some(i - 1);
                    return Some(&bytes[i..stop]);
                }
                _ => {}
            }
            i -= 1;
        }
        end = None;
        Some(&bytes[..stop])
    })
}

/// One entry: an `X-Forwarded-For` address or `X-Real-IP` line, or the `for=` node of a
/// `Forwarded` element.
fn parse_entry(entry: &[u8], header: ProxyHeader) -> Option<IpAddr> {
    let text = std::str::from_utf8(entry).ok()?.trim();
    if header != ProxyHeader::Forwarded {
        return parse_node(text);
    }
    let node = text.split(';').find_map(|pair| {
        let (name, value) = pair.trim().split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("for")
            .then_some(value.trim())
    })?;
    let node = match node.strip_prefix('"') {
        Some(rest) => rest.strip_suffix('"')?,
        None => node,
    };
    // "unknown" and obfuscated identifiers ("_hidden") name no address: parse_node refuses.
    parse_node(node)
}

/// An address with or without a port: `192.0.2.1`, `192.0.2.1:80`, `2001:db8::1`,
/// `[2001:db8::1]`, `[2001:db8::1]:443`.
pub(crate) fn parse_node(text: &str) -> Option<IpAddr> {
    let text = text.trim();
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Ok(socket) = text.parse::<SocketAddr>() {
        return Some(socket.ip());
    }
    let inner = text.strip_prefix('[')?.strip_suffix(']')?;
    inner.parse::<std::net::Ipv6Addr>().ok().map(IpAddr::V6)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hops(header: ProxyHeader, lines: &[&'static str]) -> Vec<Option<IpAddr>> {
        let mut headers = HeaderMap::new();
        for line in lines {
            headers.append(header.name(), HeaderValue::from_static(line));
        }
        hops_from_right(&headers, header).collect()
    }

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn x_forwarded_for_is_read_right_to_left_across_lines() {
        let got = hops(
            ProxyHeader::XForwardedFor,
            &["1.1.1.1, 2.2.2.2", "[2001:db8::1]:443,3.3.3.3:80 , junk"],
        );
        let want = [
            None,
            ip("3.3.3.3"),
            ip("2001:db8::1"),
            ip("2.2.2.2"),
            ip("1.1.1.1"),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn forwarded_reads_the_for_node_and_refuses_unknown_and_obfuscated() {
        let got = hops(
            ProxyHeader::Forwarded,
            &[
                r#"for=192.0.2.60;proto=http;by=203.0.113.43, For="[2001:db8:cafe::17]:4711""#,
                r#"for=unknown, for=_hidden, proto=https, for="198.51.100.7,x""#,
            ],
        );
        let want = [
            None,
            None,
            None,
            None,
            ip("2001:db8:cafe::17"),
            ip("192.0.2.60"),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn x_real_ip_lines_are_single_entries_read_from_the_last() {
        let got = hops(
            ProxyHeader::XRealIp,
            &["1.1.1.1", "2.2.2.2, 3.3.3.3", "[::1]:80"],
        );
        assert_eq!(got, [ip("::1"), None, ip("1.1.1.1")]);
    }
}
