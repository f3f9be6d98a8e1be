//! The fingerprint of a key: 64 bits of a keyed pseudorandom function of the bytes its `Hash`
//! writes, under a secret random key per limiter (README, *Fingerprints and collisions*).

#[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
use super::aes_cmac::AesCmacKey;
use core::hash::{BuildHasher, Hash};

/// The keyed hash that makes a [`KeyedLimiter`](super::KeyedLimiter)'s fingerprints. Both are
/// pseudorandom functions under a secret random key, so clients cannot choose keys that
/// collide; they differ in speed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FingerprintHash {
    /// AES-128-CMAC (RFC 4493) on x86_64 processors with AES-NI, detected when the limiter is
    /// built; SipHash-1-3 where AES-NI is absent. The default: for a u64 key it is one AES
    /// block, about 20 instructions to SipHash's 100, and a check at 1,000,000 keys takes
    /// less time (README, *Speed and memory*; `benches/keyed_paired`).
    #[default]
    AesCmac,
    /// SipHash-1-3 (std's `RandomState`) everywhere.
    SipHash13,
}

/// A limiter's fingerprint function and its secret key.
pub(super) enum Fingerprinter {
    /// AES-128-CMAC under a random key.
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    AesCmac(AesCmacKey),
    /// SipHash-1-3 under a random key; under loom a fixed key, so that a model is the same in
    /// every iteration.
    SipHash13(SipKey),
}

#[cfg(not(loom))]
type SipKey = std::collections::hash_map::RandomState;
#[cfg(loom)]
type SipKey = core::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>;

impl Fingerprinter {
    /// `wanted` under a new random key, or SipHash-1-3 if AES-NI is absent.
    pub(super) fn new(wanted: FingerprintHash) -> Fingerprinter {
        let sip = SipKey::default();
        #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
        if wanted == FingerprintHash::AesCmac {
            // 128 bits of SipHash-1-3 output under std's secret random key (seeded from the
            // OS): unpredictable as long as SipHash-1-3 is a pseudorandom function, which the
            // SipHash fingerprints rely on too.
            let key = u128::from(sip.hash_one(0u8)) | u128::from(sip.hash_one(1u8)) << 64;
            if let Some(key) = AesCmacKey::new(key) {
                return Fingerprinter::AesCmac(key);
            }
        }
        let _ = wanted;
        Fingerprinter::SipHash13(sip)
    }

    /// Which hash this is.
    pub(super) fn kind(&self) -> FingerprintHash {
        match self {
            #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
            Fingerprinter::AesCmac(_) => FingerprintHash::AesCmac,
            Fingerprinter::SipHash13(_) => FingerprintHash::SipHash13,
        }
    }

    /// The fingerprint of `key`.
    #[inline(always)]
    pub(super) fn fingerprint<Q: Hash + ?Sized>(&self, key: &Q) -> u64 {
        match self {
            #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
            Fingerprinter::AesCmac(aes) => aes.fingerprint(key),
            Fingerprinter::SipHash13(sip) => sip.hash_one(key),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn each_limiter_has_its_own_key() {
        for wanted in [FingerprintHash::AesCmac, FingerprintHash::SipHash13] {
            let (a, b) = (Fingerprinter::new(wanted), Fingerprinter::new(wanted));
            assert_eq!(a.kind(), b.kind());
            let differ = (0u64..8).filter(|k| a.fingerprint(k) != b.fingerprint(k));
            assert_eq!(differ.count(), 8, "{wanted:?}");
            assert_eq!(a.fingerprint("key"), a.fingerprint(&String::from("key")));
        }
    }
}
