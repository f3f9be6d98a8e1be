//! Redis key names: the prefix, then the key, bounded in length; and [`key_part`], the form of
//! client-chosen text (an API key, a user name) safe to put in a key.
//!
//! Redis hashes the first `{...}` of a key name to choose its Cluster slot. Text a client chose
//! must not contain one: it would pick its own slot (every key of an abuser on one node) or
//! split an application's all-or-nothing keys across slots. Nor may it grow key names (and
//! memory) without bound. Such text is replaced by a SHA-256 digest: a cryptographic hash, so
//! that no client can craft text that lands on another client's bucket.
//!
//! A digest keeps 128 bits: a second key on a given key's bucket takes about 2^128 tries; two
//! keys of one's own on one bucket about 2^64, and share only their own bucket. Text kept as it
//! is never takes a digest's form (`key_part` keeps no `#`; `full_key` digests a short key
//! spelled as a digested one), so the two forms never name one bucket.

use sha2::{Digest, Sha256};
use std::borrow::Cow;

/// The longest key (after the prefix) kept as it is in a Redis key name; a longer one is
/// replaced by its hash tag (if any) and a digest.
pub const MAX_KEY_LEN: usize = 256;

/// The longest client text [`key_part`] keeps as it is.
pub const MAX_PART_LEN: usize = 64;

/// The longest hash tag kept as it is in the name of a key longer than [`MAX_KEY_LEN`].
const MAX_TAG_LEN: usize = 64;

/// Client-chosen `text` in a form safe to put in a Redis key: the text itself when it is at
/// most [`MAX_PART_LEN`] bytes of visible ASCII other than `{`, `}`, `#` and `%`; otherwise
/// `#` and 32 hex digits of its SHA-256. The two forms never meet (only the second has `#`), and
/// distinct texts keep distinct forms.
///
/// ```
/// use cellrate_redis::key_part;
///
/// assert_eq!(key_part(b"alice"), "alice");
/// let tagged = key_part(b"{hot}x");
/// assert!(tagged.starts_with('#') && tagged.len() == 33);
/// assert_eq!(key_part(&[b'k'; 1000]).len(), 33);
/// ```
pub fn key_part(text: &[u8]) -> Cow<'_, str> {
    let plain = text.len() <= MAX_PART_LEN
        && text
            .iter()
            .all(|&b| b.is_ascii_graphic() && !matches!(b, b'{' | b'}' | b'#' | b'%'));
    match core::str::from_utf8(text) {
        Ok(text) if plain => Cow::Borrowed(text),
        _ => Cow::Owned(digest(text, 16)),
    }
}

/// `#` and the first `bytes` bytes of the SHA-256 of `text`, in hex.
fn digest(text: &[u8], bytes: usize) -> String {
    let hash = Sha256::digest(text);
    let mut out = String::with_capacity(1 + 2 * bytes);
    out.push('#');
    for b in &hash[..bytes] {
        out.push(char::from_digit(u32::from(b >> 4), 16).expect("a nibble"));
        out.push(char::from_digit(u32::from(b & 15), 16).expect("a nibble"));
    }
    out
}

/// The hash tag Redis would hash in `key`: the text between the first `{` and the first `}`
/// after it, if not empty.
fn hash_tag(key: &str) -> Option<&str> {
    let open = key.find('{')?;
    let rest = &key[open + 1..];
    let close = rest.find('}')?;
    (close > 0).then(|| &rest[..close])
}

/// Whether `key` is spelled as a digested key is: `#` and 32 hex digits, after nothing or
/// after one hash tag (`{...}` without another `}`). Such a key is digested too, so that no
/// key kept as it is can name the bucket of a digested one.
fn spelled_as_digested(key: &str) -> bool {
    let Some(rest) = key.len().checked_sub(33).and_then(|at| key.get(..at)) else {
        return false;
    };
    let tail = &key.as_bytes()[rest.len()..];
    let digest = tail[0] == b'#'
        && tail[1..]
            .iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b));
    let tag = rest.is_empty()
        || (rest.len() >= 2
            && rest.starts_with('{')
            && rest.ends_with('}')
            && !rest[1..rest.len() - 1].contains('}'));
    digest && tag
}

/// The Redis key of `key` under `prefix`: `prefix` and `key` as they are while `key` is at
/// most [`MAX_KEY_LEN`] bytes; a longer key becomes its hash tag (kept as it is up to 64
/// bytes, hashed beyond, so that keys sharing a tag still share a slot) and a digest of the
/// whole key, at most `prefix` + 99 bytes. So is a short key spelled as such a name: two keys
/// share a name only if 128 bits of their SHA-256 do.
pub(crate) fn full_key(prefix: &str, key: &str) -> String {
    if key.len() <= MAX_KEY_LEN && !spelled_as_digested(key) {
        let mut full = String::with_capacity(prefix.len() + key.len());
        full.push_str(prefix);
        full.push_str(key);
        return full;
    }
    let mut full = String::with_capacity(prefix.len() + 2 * MAX_TAG_LEN + 40);
    full.push_str(prefix);
    // A prefix with a `{` decides the slot itself (it is kept as it is).
    if !prefix.contains('{') {
        match hash_tag(key) {
            Some(tag) if tag.len() <= MAX_TAG_LEN && !tag.contains('#') => {
                full.push('{');
                full.push_str(tag);
                full.push('}');
            }
            Some(tag) => {
                full.push('{');
                full.push_str(&digest(tag.as_bytes(), 8));
                full.push('}');
            }
            None => {}
        }
    }
    full.push_str(&digest(key.as_bytes(), 16));
    full
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_keys_keep_their_slot_and_a_bounded_name() {
        let long = format!("{{acme}}:{}", "u".repeat(1000));
        let name = full_key("rl:", &long);
        assert!(
            name.starts_with("rl:{acme}#") && name.len() == 3 + 6 + 33,
            "{name}"
        );
        let other = format!("{{acme}}:{}", "v".repeat(1000));
        assert_ne!(full_key("rl:", &other), name);
        let long_tag = format!("{{{}}}:x", "t".repeat(300));
        let a = full_key("rl:", &long_tag);
        assert_eq!(hash_tag(&a).unwrap().len(), 17, "{a}");
        assert_eq!(full_key("rl:", "short"), "rl:short");
        // A short key spelled as a digested name is digested: never the long key's name.
        for digested in [name.clone(), a.clone(), full_key("rl:", &"w".repeat(300))] {
            let lookalike = &digested["rl:".len()..];
            assert!(spelled_as_digested(lookalike), "{lookalike}");
            assert_ne!(full_key("rl:", lookalike), digested);
        }
        let hex = "0123456789abcdef0123456789abcdef";
        for kept in [
            format!("x#{hex}"),
            format!("{{a}}b#{hex}"),
            format!("{{a}}}}#{hex}"),
            format!("#{}", hex.to_uppercase()),
            format!("#{}", &hex[1..]),
            format!("key:#{hex}"),
            "{acme}:user#7".to_owned(),
        ] {
            assert_eq!(full_key("rl:", &kept), format!("rl:{kept}"));
        }
        assert_eq!(hash_tag("{}x{y}"), None);
    }
}
