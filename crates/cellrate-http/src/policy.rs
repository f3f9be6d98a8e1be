//! In-process policies: [`Global`] (a `Limiter`), [`Keyed`] (a `KeyedLimiter` and a key
//! extractor), several joined by `.and(..)` and decided all or nothing with
//! [`all_of`](cellrate::all_of).

use super::backend::{Decision, How, NoKey, Outcome, Verdict};
use super::headers::{checked_name, PolicyInfo};
use super::key::{KeyError, KeyExtractor, MissingKey, RequestHead};
use super::local::{alone, check_or_book, refused_alone, sealed, together, Booked};
use super::slots::{Bucket, Slot, Slots};
use super::state::MAX_POLICIES;
use super::upkeep;
use cellrate::{Clock, Denied, KeyedLimiter, Limiter, Quota};
use core::time::Duration;
use std::hash::BuildHasher;
use std::sync::Arc;

/// One limit for all requests: a shared [`Limiter`].
pub struct Global<C: Clock> {
    name: String,
    limiter: Arc<Limiter<C>>,
    /// The quota `RateLimit-Policy` states unless a request shows the limiter's has changed.
    described: Quota,
}

impl<C: Clock> Global<C> {
    /// The policy `name` (as the headers call it) enforced by `limiter`.
    ///
    /// # Panics
    /// If `name` is empty or not printable ASCII.
    pub fn new(name: impl Into<String>, limiter: Arc<Limiter<C>>) -> Global<C> {
        Global {
            name: checked_name(name, "Global::new"),
            described: limiter.quota(),
            limiter,
        }
    }
}

/// One limit per key: a shared [`KeyedLimiter`] and the extractor of its keys.
///
/// Idle keys are evicted by a background thread, every 60 seconds by default
/// ([`evict_idle_every`](Self::evict_idle_every)).
pub struct Keyed<E: KeyExtractor, C: Clock> {
    name: String,
    limiter: Arc<KeyedLimiter<E::Key, C>>,
    extractor: E,
    evict_every: Option<Duration>,
    /// What to do with a request without a key; `None`: the layer's choice.
    missing: Option<MissingKey>,
    /// The quota `RateLimit-Policy` states: the limiter's, fixed when it was built.
    described: Quota,
}

impl<E: KeyExtractor, C: Clock> Keyed<E, C> {
    /// The policy `name` enforced by `limiter` on the keys `extractor` finds.
    ///
    /// # Panics
    /// If `name` is empty or not printable ASCII.
    pub fn new(
        name: impl Into<String>,
        limiter: Arc<KeyedLimiter<E::Key, C>>,
        extractor: E,
    ) -> Keyed<E, C> {
        Keyed {
            name: checked_name(name, "Keyed::new"),
            described: limiter.quota(),
            limiter,
            extractor,
            evict_every: Some(Duration::from_secs(60)),
            missing: None,
        }
    }

    /// What to do with a request this policy finds no key for (default: the layer's
    /// [`RateLimitBuilder::missing_key`](super::RateLimitBuilder::missing_key), 400 unless
    /// changed). Chosen per policy: an optional API-key policy can
    /// [`Skip`](MissingKey::Skip) requests without the key while the per-IP policy beside it
    /// still holds them.
    pub fn missing_key(mut self, missing: MissingKey) -> Keyed<E, C> {
        self.missing = Some(missing);
        self
    }

    /// How often a background thread removes the limiter's idle keys (full buckets, which
    /// carry no information): each pass is one [`KeyedLimiter::evict_idle`], a scan of the
    /// whole table (16 bytes per slot, `max_keys * 1.25` slots) that blocks no check. The
    /// thread holds only a weak reference and ends within one period after the limiter is
    /// dropped. One thread per limiter, however many layers and policies share it: the first
    /// layer built over it sets the period. `None`: no thread from this policy (the table
    /// still reuses idle keys' slots on insert).
    pub fn evict_idle_every(mut self, period: Option<Duration>) -> Keyed<E, C> {
        self.evict_every = period;
        self
    }

    /// The limiter.
    pub(crate) fn limiter(&self) -> &KeyedLimiter<E::Key, C> {
        &self.limiter
    }
}

impl<E: KeyExtractor, C: Clock + Send + Sync + 'static> Keyed<E, C> {
    /// A request `admit_plain` found no key for: skipped (`None`: this policy lets it
    /// through, nothing spent), or answered for want of one.
    #[cold]
    #[inline(never)]
    fn plain_without_key(
        &self,
        error: KeyError,
        how: &How<'_>,
    ) -> Option<Decision<Booked<Option<E::Key>>>> {
        let no_key = self.without_key(error, how.missing()).err()?;
        let mut verdict = Verdict::bare(Outcome::Allowed);
        no_key.record(&mut verdict);
        Some(Decision::Made(verdict))
    }

    /// The verdict of a request `admit_plain` refused: its figures, with its partition.
    #[cold]
    #[inline(never)]
    fn refused(
        &self,
        denied: Denied,
        key: E::Key,
        how: &How<'_>,
    ) -> Decision<Booked<Option<E::Key>>> {
        let partition = how.partition().map(|h| h.hash_one((0usize, &key)));
        let quota = || self.limiter.quota();
        refused_alone(denied, (quota, &self.described), partition, how, Some(key))
    }
}

impl<E: KeyExtractor, C: Clock> Keyed<E, C> {
    /// What a request without a key (`error`) gets: skipped (`Ok`), or answered for want of
    /// one.
    #[cold]
    #[inline(never)]
    fn without_key(&self, error: KeyError, layer: MissingKey) -> Result<(), NoKey> {
        let choice = self.missing.unwrap_or(layer);
        choice
            .apply(&self.name, error)
            .map_err(|e| NoKey(e, self.missing))
    }
}

/// Two sets of policies, decided together: all spend or none does.
pub struct Both<A, B> {
    first: A,
    second: B,
}

/// `self` and `other`, all or nothing: [`Both`]. At most 4 policies in all.
fn both<A: sealed::Local, B: sealed::Local<Clock = A::Clock>>(first: A, second: B) -> Both<A, B> {
    assert!(
        A::COUNT + B::COUNT <= MAX_POLICIES,
        "a layer enforces at most {MAX_POLICIES} policies"
    );
    Both { first, second }
}

/// The `.and(..)` of each in-process policy: the same method on every one.
macro_rules! and_method {
    () => {
        /// This policy and `other`, decided all or nothing (each request spends in both or in
        /// neither). At most 4 policies in all.
        ///
        /// # Panics
        /// If the two together hold more than 4 policies.
        pub fn and<P: sealed::Local<Clock = C>>(self, other: P) -> Both<Self, P> {
            both(self, other)
        }
    };
}

impl<C: Clock + Send + Sync + 'static> Global<C> {
    and_method!();
}

impl<E: KeyExtractor, C: Clock + Send + Sync + 'static> Keyed<E, C> {
    and_method!();
}

impl<A: sealed::Local, B: sealed::Local<Clock = A::Clock>> Both<A, B> {
    /// These policies and `other`, decided all or nothing. At most 4 policies in all.
    ///
    /// # Panics
    /// If they hold more than 4 policies together.
    pub fn and<P: sealed::Local<Clock = A::Clock>>(self, other: P) -> Both<Self, P> {
        both(self, other)
    }
}

impl<C: Clock + Send + Sync + 'static> sealed::Local for Global<C> {
    type Clock = C;
    type Keys = ();
    const COUNT: usize = 1;

    fn keys(&self, _: &RequestHead<'_>, _: MissingKey) -> Result<(), NoKey> {
        Ok(())
    }

    #[inline]
    fn decide_into(
        &self,
        _: &RequestHead<'_>,
        cost: u32,
        how: &How<'_>,
        out: &mut Verdict<Booked<()>>,
    ) {
        let answer = check_or_book(
            how.ticket(),
            || self.limiter.check_n(cost),
            |wait| self.limiter.reserve(cost, wait),
        );
        let quota = || self.limiter.quota();
        alone(out, answer, (quota, &self.described), None, how, ());
    }

    #[inline(always)]
    fn admit_plain(
        &self,
        _: &RequestHead<'_>,
        cost: u32,
        how: &How<'_>,
    ) -> Option<Decision<Booked<()>>> {
        let denied = self.limiter.check_n(cost).err()?;
        let quota = || self.limiter.quota();
        Some(refused_alone(
            denied,
            (quota, &self.described),
            None,
            how,
            (),
        ))
    }

    fn fill<'a>(&'a self, _: &(), first: usize, out: &mut Slots<'a, C>) {
        out.push(Slot {
            index: first,
            quota: self.limiter.quota(),
            described: &self.described,
            bucket: Bucket::Global(&self.limiter),
            partition: None,
        });
    }

    fn describe(&self, out: &mut Vec<PolicyInfo>) {
        out.push(PolicyInfo::new(&self.name, self.described));
    }

    fn clock(&self) -> &C {
        self.limiter.clock()
    }

    fn start_upkeep(&self) {}
}

impl<E: KeyExtractor, C: Clock + Send + Sync + 'static> sealed::Local for Keyed<E, C> {
    type Clock = C;
    type Keys = Option<E::Key>;
    const COUNT: usize = 1;

    // Inline, the request without a key out of line: the key comes back in registers
    // rather than through a result in memory.
    #[inline]
    fn keys(&self, head: &RequestHead<'_>, layer: MissingKey) -> Result<Self::Keys, NoKey> {
        match self.extractor.extract(head) {
            Ok(key) => Ok(Some(key)),
            Err(e) => self.without_key(e, layer).map(|()| None),
        }
    }

    #[inline]
    fn decide_into(
        &self,
        head: &RequestHead<'_>,
        cost: u32,
        how: &How<'_>,
        out: &mut Verdict<Booked<Self::Keys>>,
    ) {
        let key = match self.keys(head, how.missing()) {
            Ok(Some(key)) => key,
            Ok(None) => return, // skipped: admitted, and nothing to show
            Err(no_key) => return no_key.record(out),
        };
        // The limiter's own check: its clock read as coarsely as its quota allows.
        let answer = check_or_book(
            how.ticket(),
            || self.limiter.key(&key).check_n(cost),
            |wait| self.limiter.key(&key).reserve(cost, wait),
        );
        // The index of a lone policy is 0, as `fill` would give it.
        let partition = how.partition().map(|h| h.hash_one((0usize, &key)));
        let quota = || self.limiter.quota();
        alone(
            out,
            answer,
            (quota, &self.described),
            partition,
            how,
            Some(key),
        );
    }

    // Always inlined, as the decision it is part of: out of line, the key and the answer
    // went through memory.
    #[inline(always)]
    fn admit_plain(
        &self,
        head: &RequestHead<'_>,
        cost: u32,
        how: &How<'_>,
    ) -> Option<Decision<Booked<Self::Keys>>> {
        // The key is read where the extractor left it: moved out, it was copied byte by
        // byte (an `IpAddr` is 17 bytes aligned to 1).
        let extracted = self.extractor.extract(head);
        let key = match &extracted {
            Ok(key) => key,
            Err(e) => return self.plain_without_key(e.clone(), how),
        };
        let denied = self.limiter.key(key).check_n(cost).err()?;
        Some(self.refused(denied, key.clone(), how))
    }

    fn fill<'a>(&'a self, keys: &Self::Keys, first: usize, out: &mut Slots<'a, C>) {
        if let Some(key) = keys {
            out.push(Slot {
                index: first,
                quota: self.limiter.quota(),
                described: &self.described,
                bucket: Bucket::Keyed(self.limiter.key(key), &*self.limiter),
                partition: out.hasher.map(|h| h.hash_one((first, key))),
            });
        }
    }

    fn describe(&self, out: &mut Vec<PolicyInfo>) {
        out.push(PolicyInfo::new(&self.name, self.described));
    }

    fn clock(&self) -> &C {
        self.limiter.clock()
    }

    fn start_upkeep(&self) {
        if let Some(period) = self.evict_every {
            upkeep::evict_idle_every(&self.limiter, period);
        }
    }
}

impl<A: sealed::Local, B: sealed::Local<Clock = A::Clock>> sealed::Local for Both<A, B> {
    type Clock = A::Clock;
    type Keys = (A::Keys, B::Keys);
    const COUNT: usize = A::COUNT + B::COUNT;

    fn keys(&self, head: &RequestHead<'_>, layer: MissingKey) -> Result<Self::Keys, NoKey> {
        Ok((
            self.first.keys(head, layer)?,
            self.second.keys(head, layer)?,
        ))
    }

    fn decide_into(
        &self,
        head: &RequestHead<'_>,
        cost: u32,
        how: &How<'_>,
        out: &mut Verdict<Booked<Self::Keys>>,
    ) {
        match self.keys(head, how.missing()) {
            Ok(keys) => together(self, keys, cost, how, out),
            Err(no_key) => no_key.record(out),
        }
    }

    fn fill<'a>(&'a self, keys: &Self::Keys, first: usize, out: &mut Slots<'a, Self::Clock>) {
        self.first.fill(&keys.0, first, out);
        self.second.fill(&keys.1, first + A::COUNT, out);
    }

    fn describe(&self, out: &mut Vec<PolicyInfo>) {
        self.first.describe(out);
        self.second.describe(out);
    }

    fn clock(&self) -> &Self::Clock {
        self.first.clock()
    }

    fn start_upkeep(&self) {
        self.first.start_upkeep();
        self.second.start_upkeep();
    }
}
