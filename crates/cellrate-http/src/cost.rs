//! A request's cost from its `Content-Length`, for [`RateLimitBuilder::cost`](super::RateLimitBuilder::cost).

use super::key::RequestHead;
use http::header::CONTENT_LENGTH;

/// A cost of one token per `bytes_per_token` bytes of body (rounded up), at least 1 and at
/// most `max` (a policy's burst: more could never pass), and `max` for a request whose length
/// is not stated or cannot be read: a chunked or HTTP/2 body without `Content-Length`, several
/// lengths, garbage. A body the client does not announce is charged as the largest, so that
/// leaving the header out is no way to pay less; a body longer than its `Content-Length` is
/// the server's to refuse (hyper does).
///
/// ```
/// use cellrate_http::{content_length_cost, Global, RateLimitLayer};
/// use cellrate::{Limiter, Quota};
/// use std::sync::Arc;
///
/// // A token per KiB, a burst of 1,024 (1 MiB at once).
/// let bytes = Arc::new(Limiter::new(Quota::per_second(256).with_burst(1_024)));
/// let layer = RateLimitLayer::builder(Global::new("upload", bytes))
///     .cost(content_length_cost(1_024, 1_024))
///     .build();
/// # let _ = layer;
/// ```
///
/// # Panics
/// If `bytes_per_token` or `max` is 0 (a cost of 0 is a peek, always admitted).
pub fn content_length_cost(
    bytes_per_token: u32,
    max: u32,
) -> impl Fn(&RequestHead<'_>) -> u32 + Send + Sync + 'static {
    assert!(
        bytes_per_token > 0 && max > 0,
        "content_length_cost({bytes_per_token}, {max}): both must be at least 1"
    );
    move |head: &RequestHead<'_>| match stated_length(head) {
        Some(length) => {
            let tokens = length.div_ceil(u64::from(bytes_per_token)).max(1);
            u32::try_from(tokens).map_or(max, |tokens| tokens.min(max))
        }
        None => max,
    }
}

/// The one `Content-Length` of a request: `None` if absent, repeated or not a decimal number.
fn stated_length(head: &RequestHead<'_>) -> Option<u64> {
    let mut values = head.headers.get_all(CONTENT_LENGTH).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    let text = value.to_str().ok()?.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None; // `u64::from_str` would take a leading `+`
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Request;

    fn cost_of(lengths: &[&str]) -> u32 {
        let mut req = Request::post("/");
        for length in lengths {
            req = req.header(CONTENT_LENGTH, *length);
        }
        let req = req.body(()).unwrap();
        content_length_cost(1_000, 50)(&RequestHead::of(&req))
    }

    #[test]
    fn rounds_up_saturates_and_charges_the_most_without_a_length() {
        assert_eq!(cost_of(&["0"]), 1, "never 0, a peek");
        assert_eq!(cost_of(&["1"]), 1);
        assert_eq!(cost_of(&["1000"]), 1);
        assert_eq!(cost_of(&["1001"]), 2);
        assert_eq!(cost_of(&["49999"]), 50);
        assert_eq!(cost_of(&["5000000000"]), 50, "above 4 GiB");
        assert_eq!(cost_of(&["99999999999999999999999"]), 50, "above u64");
        assert_eq!(cost_of(&[]), 50, "chunked or HTTP/2");
        assert_eq!(cost_of(&["abc"]), 50);
        assert_eq!(cost_of(&["+5"]), 50);
        assert_eq!(cost_of(&["5", "5"]), 50);
    }
}
