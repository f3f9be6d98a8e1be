//! Parsing the hops that proxies record: `X-Forwarded-For` entries and the `for=` node of
//! RFC 7239 `Forwarded` elements, read from the right (the nearest hop first).

use http::header::{HeaderName, HeaderValue};
use http::HeaderMap;
use std::net::{IpAddr, SocketAddr};

/// The hops of `name` from the last header line's last entry to the first's first. An entry
/// that is not valid text or names no address is `None`.
pub(crate) fn hops_from_right<'h>(
    headers: &'h HeaderMap,
    name: &HeaderName,
    forwarded: bool,
) -> impl Iterator<Item = Option<IpAddr>> + 'h {
    headers
        .get_all(name)
        .iter()
        .rev()
        .flat_map(move |line| entries_from_right(line).map(move |e| parse_entry(e, forwarded)))
}

/// A header line's comma-separated entries, last first, without allocating. A comma inside a
/// quoted string does not split; an escaped quote (`\"`) does not open or close one.
fn entries_from_right(line: &HeaderValue) -> impl Iterator<Item = &[u8]> {
    let bytes = line.as_bytes();
    let mut end = Some(bytes.len());
    core::iter::from_fn(move || {
        let stop = end?;
        let mut quoted = false;
        let mut i = stop;
        while i > 0 {
            match bytes[i - 1] {
                b'"' if !(i >= 2 && bytes[i - 2] == b'\\') => quoted = !quoted,
                b',' if !quoted => {
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

/// One entry: an `X-Forwarded-For` address, or the `for=` node of a `Forwarded` element.
fn parse_entry(entry: &[u8], forwarded: bool) -> Option<IpAddr> {
    let text = std::str::from_utf8(entry).ok()?.trim();
    if !forwarded {
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

    fn hops(name: &'static str, lines: &[&'static str]) -> Vec<Option<IpAddr>> {
        let mut headers = HeaderMap::new();
        let name = HeaderName::from_static(name);
        for line in lines {
            headers.append(name.clone(), HeaderValue::from_static(line));
        }
        hops_from_right(&headers, &name, name == "forwarded").collect()
    }

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn x_forwarded_for_is_read_right_to_left_across_lines() {
        let got = hops(
            "x-forwarded-for",
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
            "forwarded",
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
}
