//! Header values whose bytes live as long as the process, each distinct one made once, and at
//! most [`MAX_TEXTS`] of them.

use http::header::HeaderValue;
use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

/// The values made so far, by their text. A value made at run time shares its bytes through a
/// reference count, which every response would raise and lower, on a cache line all threads
/// share; a static one is copied as a pointer. A value and its bytes are never freed, so each
/// text is made once: layers built again and again with the same policies (one per test, per
/// reload) reuse it, and only a new set of names and quotas adds one.
static TEXTS: Mutex<BTreeMap<&'static str, &'static HeaderValue>> = Mutex::new(BTreeMap::new());

/// The most distinct values kept: a process that builds layers with ever new policies (a
/// server reloading changed limits) holds at most this many (a few hundred kilobytes); the
/// layers built after that write their value per response instead.
pub(crate) const MAX_TEXTS: usize = 4_096;

/// `value` with bytes that live as long as the process, itself too (a response's fields hold a
/// pointer to it), or `None` once [`MAX_TEXTS`] other values are kept.
pub(crate) fn static_value(value: &HeaderValue) -> Option<&'static HeaderValue> {
    let mut texts = TEXTS.lock().unwrap_or_else(PoisonError::into_inner);
    intern(&mut texts, value)
}

/// [`static_value`] in the map `texts`.
fn intern(
    texts: &mut BTreeMap<&'static str, &'static HeaderValue>,
    value: &HeaderValue,
) -> Option<&'static HeaderValue> {
    let text = value.to_str().expect("a structured field is visible ASCII");
    if let Some(value) = texts.get(text) {
        return Some(value);
    }
    if texts.len() >= MAX_TEXTS {
        return None;
    }
    let text: &'static str = Box::leak(text.to_owned().into_boxed_str());
    let value: &'static HeaderValue = Box::leak(Box::new(HeaderValue::from_static(text)));
    texts.insert(text, value);
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_more_than_the_bound_is_kept() {
        let made: Vec<_> = (0..MAX_TEXTS + 10)
            .map(|i| {
                static_value(&HeaderValue::from_str(&format!("\"bound-{i}\";q=1;w=1")).unwrap())
            })
            .collect();
        assert!(
            made.iter().any(Option::is_none),
            "some value past the bound"
        );
        assert!(TEXTS.lock().unwrap().len() <= MAX_TEXTS);
        // A value kept before the bound was reached is still found.
        let first = HeaderValue::from_static("\"bound-0\";q=1;w=1");
        assert_eq!(static_value(&first).is_some(), made[0].is_some());
    }

    #[test]
    fn a_text_is_made_once() {
        let text = "\"a-policy-of-this-test\";q=1;w=1";
        let first = static_value(&HeaderValue::from_static(text)).unwrap();
        let again = static_value(&HeaderValue::from_str(text).unwrap()).unwrap();
        assert!(core::ptr::eq(first, again));
        let made = TEXTS.lock().unwrap();
        assert_eq!(made.keys().filter(|t| **t == text).count(), 1);
        let a = made.get(text).unwrap().as_bytes().as_ptr();
        drop(made);
        assert_eq!(
            static_value(&HeaderValue::from_static(text))
                .unwrap()
                .as_bytes()
                .as_ptr(),
            a
        );
    }
}
