//! AES-128-CMAC (NIST SP 800-38B, RFC 4493) on AES-NI, as the [`Hasher`] of fingerprints.
//!
//! CMAC is a pseudorandom function of messages of any length under a secret key, as long as
//! AES is a pseudorandom permutation; its first 64 bits are a fingerprint no client can steer,
//! as SipHash's are. It is here for speed: for a u64 key it is one AES block, 11 instructions,
//! where SipHash-1-3 is about 100, and a check at 1,000,000 keys is bound by how many cache
//! misses of successive checks the processor overlaps, which falls as a check's instructions
//! grow (README, *Speed and memory*).
//!
//! The message is the byte stream that the key's `Hash` writes, in blocks of 16 bytes. The last
//! block is held back until the stream ends: whole, it is XORed with subkey K1; partial, it is
//! padded with 0x80 and zeros and XORed with K2; then it is encrypted after the CBC chain of the
//! blocks before it.
//!
//! The AES rounds are inline assembly, so that they inline into the check: a function compiled
//! for the `aes` target feature cannot be inlined into code compiled without it, and with a call
//! per hash, a loop of hash-then-CAS over 1,000,000 slots took 1.35-1.4x the time it took with
//! the rounds inline. [`AesCmacKey::new`]
//! detects AES-NI at run time and returns `None` without it; every other use of the
//! instructions goes through an `AesCmacKey`.

use core::arch::asm;
use core::hash::{Hash, Hasher};

/// The 11 round keys of AES-128 and the two CMAC subkeys. Blocks are `u128` in memory order
/// (byte 0 of a block is the low byte).
#[repr(C, align(16))]
pub(crate) struct AesCmacKey {
    /// First, so that it is 16-byte aligned, as SSE memory operands must be.
    round_keys: [u128; 11],
    k1: u128,
    k2: u128,
}

impl AesCmacKey {
    /// The CMAC key for the AES key `key`, if this processor has AES-NI.
    pub(crate) fn new(key: u128) -> Option<AesCmacKey> {
        if !std::is_x86_feature_detected!("aes") {
            return None;
        }
        let mut this = AesCmacKey {
            round_keys: expand(key),
            k1: 0,
            k2: 0,
        };
        // RFC 4493 2.3: L = AES(0), K1 = dbl(L), K2 = dbl(K1), doubling a block read as a
        // big-endian number.
        let dbl = |block: u128| {
            let x = block.swap_bytes();
            ((x << 1) ^ if x >> 127 == 1 { 0x87 } else { 0 }).swap_bytes()
        };
        this.k1 = dbl(this.encrypt(0));
        this.k2 = dbl(this.k1);
        Some(this)
    }

    /// The first 64 bits of the CMAC of what `value` hashes.
    #[inline(always)]
    pub(crate) fn fingerprint<Q: Hash + ?Sized>(&self, value: &Q) -> u64 {
        let mut cmac = AesCmac::new(self);
        value.hash(&mut cmac);
        cmac.finish()
    }

    /// AES-128 encryption of one block.
    #[inline(always)]
    fn encrypt(&self, block: u128) -> u128 {
        let (lo, hi): (u64, u64);
        // SAFETY:
        // - AES-NI is present: an `AesCmacKey` exists only if `new` detected it; the other
        //   instructions are SSE2, part of every x86_64.
        // - The memory operands are the round keys of `self`: readable for the borrow, and
        //   16-byte aligned (`repr(align(16))` with `round_keys` first).
        // - The asm writes only its declared operands, reads no other memory, and does not
        //   touch the stack or the flags.
        unsafe {
            asm!(
                "movq {b}, {lo}",
                "movq {t}, {hi}",
                "punpcklqdq {b}, {t}",
                "pxor {b}, xmmword ptr [{rk}]",
                "aesenc {b}, xmmword ptr [{rk} + 16]",
                "aesenc {b}, xmmword ptr [{rk} + 32]",
                "aesenc {b}, xmmword ptr [{rk} + 48]",
                "aesenc {b}, xmmword ptr [{rk} + 64]",
                "aesenc {b}, xmmword ptr [{rk} + 80]",
                "aesenc {b}, xmmword ptr [{rk} + 96]",
                "aesenc {b}, xmmword ptr [{rk} + 112]",
                "aesenc {b}, xmmword ptr [{rk} + 128]",
                "aesenc {b}, xmmword ptr [{rk} + 144]",
                "aesenclast {b}, xmmword ptr [{rk} + 160]",
                "movq {lo}, {b}",
                "pshufd {t}, {b}, 0xEE",
                "movq {hi}, {t}",
                lo = inout(reg) block as u64 => lo,
                hi = inout(reg) (block >> 64) as u64 => hi,
                rk = in(reg) self.round_keys.as_ptr(),
                b = out(xmm_reg) _,
                t = out(xmm_reg) _,
                options(pure, readonly, nostack, preserves_flags),
            );
        }
        u128::from(lo) | u128::from(hi) << 64
    }
}

/// The AES-128 key schedule (FIPS 197, 5.2), `aeskeygenassist` giving SubWord(RotWord(w3)) ^
/// Rcon. Only [`AesCmacKey::new`] calls it, after detecting AES-NI.
fn expand(key: u128) -> [u128; 11] {
    let mut keys = [key; 11];
    macro_rules! round {
        ($i:literal, $rcon:literal) => {{
            let prev = keys[$i - 1];
            let assist: u64;
            // SAFETY:
            // - AES-NI is present: `AesCmacKey::new`, the only caller, detected it; the other
            //   instructions are SSE2.
            // - Registers only: the asm reads no memory and writes only its declared operands.
            unsafe {
                asm!(
                    "movq {x}, {lo}",
                    "movq {t}, {hi}",
                    "punpcklqdq {x}, {t}",
                    concat!("aeskeygenassist {x}, {x}, ", $rcon),
                    "pshufd {x}, {x}, 0xFF",
                    "movq {out}, {x}",
                    lo = in(reg) prev as u64,
                    hi = in(reg) (prev >> 64) as u64,
                    out = lateout(reg) assist,
                    x = out(xmm_reg) _,
                    t = out(xmm_reg) _,
                    options(pure, nomem, nostack, preserves_flags),
                );
            }
            let w0 = (prev as u32) ^ (assist as u32);
            let w1 = ((prev >> 32) as u32) ^ w0;
            let w2 = ((prev >> 64) as u32) ^ w1;
            let w3 = ((prev >> 96) as u32) ^ w2;
            keys[$i] =
                u128::from(w0) | u128::from(w1) << 32 | u128::from(w2) << 64 | u128::from(w3) << 96;
        }};
    }
    round!(1, "0x01");
    round!(2, "0x02");
    round!(3, "0x04");
    round!(4, "0x08");
    round!(5, "0x10");
    round!(6, "0x20");
    round!(7, "0x40");
    round!(8, "0x80");
    round!(9, "0x1B");
    round!(10, "0x36");
    keys
}

/// A CMAC in progress over the bytes written so far.
pub(crate) struct AesCmac<'k> {
    key: &'k AesCmacKey,
    /// The CBC chain of the whole blocks before `block`.
    chain: u128,
    /// The last block so far, its first `len` bytes written (0 to 16; the rest zero).
    block: u128,
    len: u32,
}

impl<'k> AesCmac<'k> {
    fn new(key: &'k AesCmacKey) -> Self {
        AesCmac {
            key,
            chain: 0,
            block: 0,
            len: 0,
        }
    }

    /// Appends the low `n` bytes of `bytes` (1 to 8; the bytes above them zero).
    #[inline(always)]
    fn push(&mut self, bytes: u64, n: u32) {
        if self.len == 16 {
            // More follows a whole block: it is not the last, so it joins the chain.
            self.chain = self.key.encrypt(self.chain ^ self.block);
            self.block = 0;
            self.len = 0;
        }
        self.block |= u128::from(bytes) << (8 * self.len);
        let room = 16 - self.len;
        if n <= room {
            self.len += n;
        } else {
            // The first `room` bytes end this block; the rest start the next. More follows this
            // block, so it joins the chain.
            self.chain = self.key.encrypt(self.chain ^ self.block);
            self.block = u128::from(bytes >> (8 * room));
            self.len = n - room;
        }
    }

    /// The whole 128-bit CMAC.
    #[inline(always)]
    fn mac(&self) -> u128 {
        let last = if self.len == 16 {
            self.block ^ self.key.k1
        } else {
            (self.block | 0x80 << (8 * self.len)) ^ self.key.k2
        };
        self.key.encrypt(self.chain ^ last)
    }
}

impl Hasher for AesCmac<'_> {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.push(u64::from_le_bytes(word.try_into().unwrap()), 8);
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut word = [0; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.push(u64::from_le_bytes(word), rest.len() as u32);
        }
    }

    // The integer writes append the integer's little-endian bytes, as `write` of
    // `to_le_bytes()` would (x86_64 is little-endian, so the default `to_ne_bytes` agrees).
    #[inline(always)]
    fn write_u8(&mut self, i: u8) {
        self.push(u64::from(i), 1);
    }

    #[inline(always)]
    fn write_u16(&mut self, i: u16) {
        self.push(u64::from(i), 2);
    }

    #[inline(always)]
    fn write_u32(&mut self, i: u32) {
        self.push(u64::from(i), 4);
    }

    #[inline(always)]
    fn write_u64(&mut self, i: u64) {
        self.push(i, 8);
    }

    #[inline(always)]
    fn write_usize(&mut self, i: usize) {
        self.push(i as u64, 8);
    }

    #[inline(always)]
    fn finish(&self) -> u64 {
        self.mac() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes from hex.
    fn bytes(hex: &str) -> Vec<u8> {
        let digits = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).unwrap();
        (0..hex.len()).step_by(2).map(digits).collect()
    }

    /// A block from the hex of its 16 bytes.
    fn block(hex: &str) -> u128 {
        u128::from_le_bytes(bytes(hex).try_into().unwrap())
    }

    /// RFC 4493, section 4: the key, and the 64-byte message whose prefixes are examples 1-4.
    const KEY: &str = "2b7e151628aed2a6abf7158809cf4f3c";
    const MESSAGE: &str = "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51\
                           30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710";

    fn key() -> Option<AesCmacKey> {
        let key = AesCmacKey::new(block(KEY));
        if key.is_none() {
            eprintln!("no AES-NI on this processor: AES-CMAC not tested");
        }
        key
    }

    fn mac_of(key: &AesCmacKey, writes: &[&[u8]]) -> u128 {
        let mut cmac = AesCmac::new(key);
        for w in writes {
            cmac.write(w);
        }
        cmac.mac()
    }

    #[test]
    fn subkeys_and_macs_are_rfc_4493s() {
        let Some(key) = key() else { return };
        assert_eq!(key.encrypt(0), block("7df76b0c1ab899b33e42f047b91b546f"));
        assert_eq!(key.k1, block("fbeed618357133667c85e08f7236a8de"));
        assert_eq!(key.k2, block("f7ddac306ae266ccf90bc11ee46d513b"));
        let message = bytes(MESSAGE);
        for (len, mac) in [
            (0, "bb1d6929e95937287fa37d129b756746"),
            (16, "070a16b46b4d4144f79bdd9dd04a287c"),
            (40, "dfa66747de9ae63030ca32611497c827"),
            (64, "51f0bebf7e3b9d92fc49741779363cfe"),
        ] {
            assert_eq!(mac_of(&key, &[&message[..len]]), block(mac), "{len} bytes");
        }
    }

    #[test]
    fn a_message_split_anywhere_has_the_same_mac() {
        let Some(key) = key() else { return };
        let message = bytes(MESSAGE);
        for len in 0..=message.len() {
            let whole = mac_of(&key, &[&message[..len]]);
            for cut in 0..=len {
                let (a, b) = message[..len].split_at(cut);
                assert_eq!(mac_of(&key, &[a, b]), whole, "{len} bytes cut at {cut}");
            }
            // Byte by byte, through `push`'s partial words.
            let each: Vec<&[u8]> = message[..len].chunks(1).collect();
            assert_eq!(mac_of(&key, &each), whole, "{len} bytes one at a time");
        }
    }

    #[test]
    fn integer_writes_are_their_little_endian_bytes() {
        let Some(key) = key() else { return };
        let mut typed = AesCmac::new(&key);
        typed.write_u8(0xAB);
        typed.write_u16(0xCDEF);
        typed.write_u32(0x0123_4567);
        typed.write_u64(0x89AB_CDEF_0123_4567);
        typed.write_usize(42);
        let mut raw = Vec::new();
        raw.extend_from_slice(&0xABu8.to_le_bytes());
        raw.extend_from_slice(&0xCDEFu16.to_le_bytes());
        raw.extend_from_slice(&0x0123_4567u32.to_le_bytes());
        raw.extend_from_slice(&0x89AB_CDEF_0123_4567u64.to_le_bytes());
        raw.extend_from_slice(&42usize.to_le_bytes());
        assert_eq!(typed.mac(), mac_of(&key, &[&raw]));
        assert_eq!(
            key.fingerprint(&7u64),
            mac_of(&key, &[&7u64.to_le_bytes()]) as u64
        );
    }
}
