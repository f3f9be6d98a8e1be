//! Bookings: admissions that can be given back. A booking names the spend it gives back (its
//! key, quota, cost and receipt), so a give-back never returns more than that request still
//! holds (docs/design.md, section 7).

use super::script::{self, MicroQuota, Receipt};
use super::{Error, RedisLimiter};
use cellrate::Allowed;
use cellrate::Nanos;

/// Tokens spent in one Redis bucket by [`RedisLimiter::reserve_key_n`] (or one key of a
/// [joint booking](super::JointBooking)), which [`Booking::cancel`] gives back and
/// [`Booking::settle`] corrects to the real cost.
///
/// Dropping a booking keeps the spend. A give-back uses the quota the tokens were spent under
/// and returns at most what the request still holds: the part of its tokens that has not yet
/// been earned back by the passing of time, moved down by the give-backs of earlier requests.
/// It never hands back the tokens of a request admitted after it. A booking the
/// [`FailurePolicy`](super::FailurePolicy) made (Redis gave no decision) gives nothing back.
///
/// ```no_run
/// # async fn run(limiter: cellrate_redis::RedisLimiter) -> Result<(), cellrate_redis::Error> {
/// // Reserve an estimate of 100 tokens, settle the real figure once it is known.
/// if let Ok(booking) = limiter.reserve_key_n("user:42", 100).await {
///     let used = 37; // the work's real cost
///     booking.settle(used).await?;
/// }
/// # Ok(())
/// # }
/// ```
///
/// A booking is not `Clone`: giving back twice would return tokens that by then belong to a
/// later request.
#[must_use = "dropping a booking keeps its spend; cancel or settle it to give tokens back"]
pub struct Booking {
    limiter: RedisLimiter,
    key: String,
    quota: MicroQuota,
    cost: u32,
    receipt: Option<Receipt>,
    allowed: Allowed,
}

impl core::fmt::Debug for Booking {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Booking")
            .field("key", &self.key)
            .field("cost", &self.cost)
            .field("quota", &self.quota.effective())
            .field("from_redis", &self.receipt.is_some())
            .field("allowed", &self.allowed)
            .finish()
    }
}

impl Booking {
    pub(crate) fn new(
        limiter: &RedisLimiter,
        key: &str,
        quota: MicroQuota,
        cost: u32,
        receipt: Option<Receipt>,
        allowed: Allowed,
    ) -> Booking {
        Booking {
            limiter: limiter.clone(),
            key: key.to_owned(),
            quota,
            cost,
            receipt,
            allowed,
        }
    }

    /// The key booked (as given, without the prefix).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The tokens booked.
    pub fn cost(&self) -> u32 {
        self.cost
    }

    /// The bucket just after the spend: `remaining` and `reset_after`.
    pub fn allowed(&self) -> Allowed {
        self.allowed
    }

    /// Whether Redis made the spend (and so a give-back can return tokens); `false` when the
    /// failure policy answered.
    pub fn from_redis(&self) -> bool {
        self.receipt.is_some()
    }

    /// Keeps the spend; the same as dropping the booking, but says so.
    pub fn commit(self) -> Allowed {
        self.allowed
    }

    /// Gives the tokens back on the server's clock. See [`Booking::cancel_at`].
    pub async fn cancel(self) -> Result<(), Error> {
        let cost = self.cost;
        self.give_back(cost, None).await
    }

    /// Gives the tokens back at `now` (ns since the Unix epoch; give back on the clock the
    /// booking was made on). What comes back is at most the cost, and only the part of the
    /// request's tokens that still lies in the future, after the give-backs of earlier
    /// requests moved it down; a request admitted after this one keeps its tokens. A
    /// give-back that times out is not retried.
    pub async fn cancel_at(self, now: Nanos) -> Result<(), Error> {
        let cost = self.cost;
        self.give_back(cost, Some(now)).await
    }

    /// Settles at the real cost on the server's clock. See [`Booking::settle_at`].
    pub async fn settle(self, actual: u32) -> Result<(), Error> {
        self.settle_inner(actual, None).await
    }

    /// Settles at the real cost `actual` at `now`: a lower cost gives the difference back by
    /// the rule of [`Booking::cancel_at`]; a higher one charges the difference
    /// unconditionally, under the quota of the spend (the work is done), so the bucket may go
    /// into debt that later requests wait out (at most 2^51 µs of it). A booking the failure
    /// policy made neither gives back nor charges.
    pub async fn settle_at(self, actual: u32, now: Nanos) -> Result<(), Error> {
        self.settle_inner(actual, Some(now)).await
    }

    async fn settle_inner(self, actual: u32, now: Option<Nanos>) -> Result<(), Error> {
        if actual < self.cost {
            let n = self.cost - actual;
            self.give_back(n, now).await
        } else if actual > self.cost && self.receipt.is_some() {
            let n = actual - self.cost;
            self.run(n, now, true).await
        } else {
            Ok(())
        }
    }

    async fn give_back(self, n: u32, now: Option<Nanos>) -> Result<(), Error> {
        self.run(n, now, false).await
    }

    /// One settle script call: gives back `n` tokens, or charges `n` more.
    async fn run(&self, n: u32, now: Option<Nanos>, charge: bool) -> Result<(), Error> {
        let Some(receipt) = self.receipt else {
            return Ok(());
        };
        if n == 0 {
            return Ok(());
        }
        let limiter = &self.limiter;
        let time = now.map(script::micros_since_epoch).transpose()?;
        if let Some(cache) = &limiter.deny {
            cache.forget(&limiter.cache_name(&self.key, &self.quota));
        }
        let mut args = limiter.args(&self.quota, n, time).to_vec();
        // Exact: a receipt's figures are the script's own, below 2^53.
        args.extend([receipt.after as i64, receipt.g0 as i64, i64::from(charge)]);
        let (reply, redis_key) = limiter
            .invoke_key(&limiter.settle, &self.key, &self.quota, &args)
            .await?;
        script::decode_settle(&reply, &redis_key).map(|_| ())
    }
}
