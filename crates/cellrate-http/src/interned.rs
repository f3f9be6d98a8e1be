//! Header values whose bytes live as long as the process, each distinct one made once.

use http::header::HeaderValue;
use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

/// The texts made so far. A value made at run time shares its bytes through a reference
/// count, which every response would raise and lower, on a cache line all threads share; a
/// static one is copied as a pointer. The bytes are never freed, so each text is made once:
/// layers built again and again with the same policies (one per test, per reload) reuse it,
/// and only a new set of names and quotas adds one.
static TEXTS: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());

/// `value` with bytes that live as long as the process.
pub(crate) fn static_value(value: &HeaderValue) -> HeaderValue {
    let text = value.to_str().expect("a structured field is visible ASCII");
    let mut texts = TEXTS.lock().unwrap_or_else(PoisonError::into_inner);
    let text = match texts.get(text) {
        Some(text) => *text,
        None => {
            let made: &'static str = Box::leak(text.to_owned().into_boxed_str());
            texts.insert(made);
            made
        }
    };
    HeaderValue::from_static(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_made_once() {
        let text = "\"a-policy-of-this-test\";q=1;w=1";
        let first = static_value(&HeaderValue::from_static(text));
        let again = static_value(&HeaderValue::from_str(text).unwrap());
        assert_eq!(first, again);
        let made = TEXTS.lock().unwrap();
        assert_eq!(made.iter().filter(|t| **t == text).count(), 1);
        let a = made.get(text).unwrap().as_ptr();
        drop(made);
        assert_eq!(
            static_value(&HeaderValue::from_static(text))
                .as_bytes()
                .as_ptr(),
            a
        );
    }
}
