//! The fingerprint of a key: 64 bits of a keyed pseudorandom function of the bytes its `Hash`
//! writes, under a secret random key per limiter (docs/design.md §6.6).

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
    /// block, far fewer instructions than SipHash-1-3 (BENCHMARKS.md compares the two).
    #[default]
    AesCmac,
    /// SipHash-1-3 everywhere.
    SipHash13,
}

/// A limiter's fingerprint function and its secret key.
pub(super) enum Fingerprinter {
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    AesCmac(AesCmacKey),
    /// SipHash-1-3 under a random key; under loom a fixed key, so that a model is the same in
    /// every iteration.
    SipHash13(SipKey),
}

/// SipHash-1-3 under a 128-bit key.
#[cfg(not(loom))]
#[derive(Clone, Copy)]
pub(super) struct SipKey(u64, u64);

#[cfg(not(loom))]
impl BuildHasher for SipKey {
    type Hasher = siphasher::sip::SipHasher13;

    #[inline]
    fn build_hasher(&self) -> Self::Hasher {
        siphasher::sip::SipHasher13::new_with_keys(self.0, self.1)
    }
}

#[cfg(loom)]
type SipKey = core::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>;

/// 128 secret random bits: from the operating system, or where it has none to give, two
/// SipHash-1-3 outputs under std's OS-seeded `RandomState`.
#[cfg(not(loom))]
fn secret_key() -> u128 {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_ok() {
        return u128::from_le_bytes(bytes);
    }
    let std_key = std::collections::hash_map::RandomState::new();
    u128::from(std_key.hash_one(0u8)) | u128::from(std_key.hash_one(1u8)) << 64
}

impl Fingerprinter {
    /// `wanted` under a new random key, or SipHash-1-3 if AES-NI is absent.
    pub(super) fn new(wanted: FingerprintHash) -> Fingerprinter {
        #[cfg(not(loom))]
        let key = secret_key();
        #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
        if wanted == FingerprintHash::AesCmac {
            if let Some(key) = AesCmacKey::new(key) {
                return Fingerprinter::AesCmac(key);
            }
        }
        let _ = wanted;
        #[cfg(not(loom))]
        let sip = SipKey(key as u64, (key >> 64) as u64);
        #[cfg(loom)]
        let sip = SipKey::default();
        Fingerprinter::SipHash13(sip)
    }

    pub(super) fn kind(&self) -> FingerprintHash {
        match self {
            #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
            Fingerprinter::AesCmac(_) => FingerprintHash::AesCmac,
            Fingerprinter::SipHash13(_) => FingerprintHash::SipHash13,
        }
    }

    #[inline]
    pub(super) fn fingerprint<Q: Hash + ?Sized>(&self, key: &Q) -> u64 {
        match self {
            #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
            Fingerprinter::AesCmac(aes) => aes.fingerprint(key),
            Fingerprinter::SipHash13(sip) => sip.hash_one(key),
        }
    }
}

/// The id of a key's bucket under a quota other than the limiter's own: `fp` mixed with the
/// quota's figures by a bijection (murmur3's finaliser), so that it is as unpredictable as
/// `fp` and collides no more often than keys do (docs/design.md §13).
pub(super) fn under_quota(fp: u64, quota: &crate::quota::Quota) -> u64 {
    let figures = quota
        .emission_interval_ns()
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .rotate_left(17)
        ^ u64::from(quota.burst()).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    let mut x = fp ^ figures;
    x ^= x >> 33;
    x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    x ^= x >> 33;
    x = x.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    x ^ (x >> 33)
}

#[cfg(all(test, not(loom)))]
#[path = "fingerprint_tests.rs"]
mod tests;
