//! Header values whose bytes live as long as the process, each distinct one made once.

use http::header::HeaderValue;
use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

/// The values made so far, by their text. A value made at run time shares its bytes through a
/// reference count, which every response would raise and lower, on a cache line all threads
/// share; a static one is copied as a pointer. A value and its bytes are never freed, so each
/// text is made once: layers built again and again with the same policies (one per test, per
/// reload) reuse it, and only a new set of names and quotas adds one.
static TEXTS: Mutex<BTreeMap<&'static str, &'static HeaderValue>> = Mutex::new(BTreeMap::new());

/// `value` with bytes that live as long as the process, itself too: a response's fields hold
/// a pointer to it.
pub(crate) fn static_value(value: &HeaderValue) -> &'static HeaderValue {
    let text = value.to_str().expect("a structured field is visible ASCII");
    let mut texts = TEXTS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(value) = texts.get(text) {
        return value;
    }
    let text: &'static str = Box::leak(text.to_owned().into_boxed_str());
    let value: &'static HeaderValue = Box::leak(Box::new(HeaderValue::from_static(text)));
    texts.insert(text, value);
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_made_once() {
        let text = "\"a-policy-of-this-test\";q=1;w=1";
        let first = static_value(&HeaderValue::from_static(text));
        let again = static_value(&HeaderValue::from_str(text).unwrap());
        assert!(core::ptr::eq(first, again));
        let made = TEXTS.lock().unwrap();
        assert_eq!(made.keys().filter(|t| **t == text).count(), 1);
        let a = made.get(text).unwrap().as_bytes().as_ptr();
        drop(made);
        assert_eq!(
            static_value(&HeaderValue::from_static(text))
                .as_bytes()
                .as_ptr(),
            a
        );
    }
}
