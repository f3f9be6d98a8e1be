//! Spends that can be given back: the `reserve_*` calls, each answering a [`Booking`].

use super::booking::Booking;
use super::script::MicroQuota;
use super::{Answer, Error, RedisLimiter};
use cellrate::Denied;
use cellrate::Nanos;
use cellrate::Quota;

impl RedisLimiter {
    /// [`RedisLimiter::check_key_n`], answering a [`Booking`] that can give the tokens back
    /// ([`Booking::cancel`]) or settle the real cost ([`Booking::settle`]). The failure policy
    /// applies; a booking it made gives nothing back.
    pub async fn reserve_key_n(&self, key: &str, cost: u32) -> Result<Booking, Denied> {
        let quota = self.quota;
        self.reserve(key, cost, Ok(quota), quota.effective()).await
    }

    /// [`RedisLimiter::reserve_key_n`] on the key's bucket under another quota (see
    /// [`RedisLimiter::check_key_n_with_quota`]); the booking gives back to that bucket.
    pub async fn reserve_key_n_with_quota(
        &self,
        key: &str,
        cost: u32,
        quota: &Quota,
    ) -> Result<Booking, Denied> {
        self.reserve(key, cost, MicroQuota::new(quota), *quota)
            .await
    }

    /// [`RedisLimiter::reserve_key_n`] without a failure policy: Redis's answer or why there
    /// is none.
    pub async fn try_reserve_key_n(
        &self,
        key: &str,
        cost: u32,
    ) -> Result<Result<Booking, Denied>, Error> {
        self.try_reserve(key, cost, self.quota, None).await
    }

    /// [`RedisLimiter::try_reserve_key_n`] at `now` (ns since the Unix epoch).
    pub async fn try_reserve_key_n_at(
        &self,
        key: &str,
        cost: u32,
        now: Nanos,
    ) -> Result<Result<Booking, Denied>, Error> {
        self.try_reserve(key, cost, self.quota, Some(now)).await
    }

    /// [`RedisLimiter::try_reserve_key_n`] under another quota for this call only.
    pub async fn try_reserve_key_n_with_quota(
        &self,
        key: &str,
        cost: u32,
        quota: &Quota,
    ) -> Result<Result<Booking, Denied>, Error> {
        self.try_reserve(key, cost, MicroQuota::new(quota)?, None)
            .await
    }

    /// [`RedisLimiter::try_reserve_key_n_with_quota`] at `now` (ns since the Unix epoch).
    pub async fn try_reserve_key_n_with_quota_at(
        &self,
        key: &str,
        cost: u32,
        quota: &Quota,
        now: Nanos,
    ) -> Result<Result<Booking, Denied>, Error> {
        self.try_reserve(key, cost, MicroQuota::new(quota)?, Some(now))
            .await
    }

    /// [`RedisLimiter::reserve_key_n_with_quota`], telling who answered: Redis, the local
    /// fallback or the failure policy, or a [usage error](Error::is_usage) refused as a fault
    /// (see [`Source`](super::Source)).
    pub async fn reserve_key_n_answer(
        &self,
        key: &str,
        cost: u32,
        quota: &Quota,
    ) -> Answer<Booking> {
        self.reserve_answer(key, cost, MicroQuota::new(quota), *quota)
            .await
    }

    async fn reserve(
        &self,
        key: &str,
        cost: u32,
        micro: Result<MicroQuota, Error>,
        quota: Quota,
    ) -> Result<Booking, Denied> {
        self.reserve_answer(key, cost, micro, quota).await.decision
    }

    async fn reserve_answer(
        &self,
        key: &str,
        cost: u32,
        micro: Result<MicroQuota, Error>,
        quota: Quota,
    ) -> Answer<Booking> {
        let spent = micro.as_ref().ok().copied();
        let ((decision, receipt), source) = self.answer_one(key, cost, micro, quota, true).await;
        // Without a quota the script can hold, the answer was a refusal: `spent` is set here.
        let micro = spent.unwrap_or(self.quota);
        let decision =
            decision.map(|allowed| Booking::new(self, key, micro, cost, receipt, allowed));
        Answer { decision, source }
    }

    async fn try_reserve(
        &self,
        key: &str,
        cost: u32,
        quota: MicroQuota,
        now: Option<Nanos>,
    ) -> Result<Result<Booking, Denied>, Error> {
        if now.is_none() {
            if let Some(denied) = self.cached_refusal(key, cost, &quota) {
                return Ok(Err(denied));
            }
        }
        let (decision, receipt) = self.spend_one(key, cost, &quota, now, true).await?;
        Ok(decision.map(|allowed| Booking::new(self, key, quota, cost, receipt, allowed)))
    }
}
