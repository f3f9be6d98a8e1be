//! A keyed limiter at a time passed in: [`KeyedLimiter::at`].

use super::{KeyedBucket, KeyedLimiter};
use crate::at::At;
use crate::clock::Clock;
use crate::outcome::{Allowed, Denied};
use core::borrow::Borrow;
use core::hash::Hash;

impl<'a, K: Hash + Eq, C: Clock> At<'a, KeyedLimiter<K, C>> {
    /// [`KeyedLimiter::check_key`] at this time.
    #[inline]
    pub fn check_key<Q>(&self, key: &Q) -> Result<Allowed, Denied>
    where
        K: Borrow<Q>,
        Q: Hash + ?Sized,
    {
        self.key(key).check_n(1)
    }

    /// [`KeyedLimiter::key`]: the handle's checks, reservations and `available` at this time
    /// (its waits read the limiter's clock).
    #[inline]
    pub fn key<Q>(&self, key: &Q) -> KeyedBucket<'a, C>
    where
        K: Borrow<Q>,
        Q: Hash + ?Sized,
    {
        self.of.key_as(key, Some(self.now))
    }

    /// [`KeyedLimiter::check_many`] at this time.
    pub fn check_many<Q>(&self, requests: &[(&Q, u32)]) -> Vec<Result<Allowed, Denied>>
    where
        K: Borrow<Q>,
        Q: Hash + ?Sized,
    {
        self.of.check_many_at(requests, self.now)
    }

    /// [`KeyedLimiter::evict_idle`] at this time.
    pub fn evict_idle(&self) -> usize {
        self.of.evict_idle_at(self.now)
    }
}
