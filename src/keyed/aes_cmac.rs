//! AES-128-CMAC (NIST SP 800-38B, RFC 4493) on AES-NI, as the [`Hasher`] of fingerprints: why
//! it is the default, and why its rounds are inline assembly, docs/design.md §6.6.
//! [`AesCmacKey::new`] detects AES-NI at run time and returns `None` without it; every other
//! use of the instructions goes through an `AesCmacKey`.

use core::arch::asm;
use core::hash::{Hash, Hasher};

/// The asm of one AES-128 encryption: the block from `{lo}` (low half) and `{hi}` into `{b}`
/// (with `{t}` as scratch), then the 10 rounds with the round keys at `{rk}`; the result is
/// left in `{b}`.
macro_rules! aes_128_rounds {
    () => {
        concat!(
            "movq {b}, {lo}\n",
            "movq {t}, {hi}\n",
            "punpcklqdq {b}, {t}\n",
            "pxor {b}, xmmword ptr [{rk}]\n",
            "aesenc {b}, xmmword ptr [{rk} + 16]\n",
            "aesenc {b}, xmmword ptr [{rk} + 32]\n",
            "aesenc {b}, xmmword ptr [{rk} + 48]\n",
            "aesenc {b}, xmmword ptr [{rk} + 64]\n",
            "aesenc {b}, xmmword ptr [{rk} + 80]\n",
            "aesenc {b}, xmmword ptr [{rk} + 96]\n",
            "aesenc {b}, xmmword ptr [{rk} + 112]\n",
            "aesenc {b}, xmmword ptr [{rk} + 128]\n",
            "aesenc {b}, xmmword ptr [{rk} + 144]\n",
            "aesenclast {b}, xmmword ptr [{rk} + 160]",
        )
    };
}

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
            // SAFETY: AES-NI is present, detected just above.
            round_keys: unsafe { expand(key) },
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
    #[inline(always)] // BENCHMARKS.md, "Fingerprints"
    pub(crate) fn fingerprint<Q: Hash + ?Sized>(&self, value: &Q) -> u64 {
        let mut cmac = AesCmac::new(self);
        value.hash(&mut cmac);
        cmac.finish()
    }

    #[inline(always)] // BENCHMARKS.md, "Fingerprints"
    fn encrypt(&self, block: u128) -> u128 {
        let (lo, hi): (u64, u64);
        // SAFETY:
        // - AES-NI is present: an `AesCmacKey` exists only if `new` detected it; the other
        //   instructions are SSE2, part of every x86_64.
        // - The memory operands are the round keys of `self`: readable for the borrow, and
        //   16-byte aligned (`repr(align(16))` with `round_keys` first), as SSE operands must be.
        // - The asm writes only its declared operands, reads no other memory, and does not
        //   touch the stack or the flags.
        unsafe {
            asm!(
                aes_128_rounds!(),
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

    /// The low 64 bits of [`encrypt`](Self::encrypt): the fingerprint needs no more, and the
    /// high half would cost two instructions that the compiler cannot drop from inside the asm.
    #[inline(always)] // BENCHMARKS.md, "Fingerprints"
    fn encrypt_low(&self, block: u128) -> u64 {
        let lo: u64;
        // SAFETY: as in `encrypt`, whose asm this is without the extraction of the high half.
        unsafe {
            asm!(
                aes_128_rounds!(),
                "movq {lo}, {b}",
                lo = inout(reg) block as u64 => lo,
                hi = in(reg) (block >> 64) as u64,
                rk = in(reg) self.round_keys.as_ptr(),
                b = out(xmm_reg) _,
                t = out(xmm_reg) _,
                options(pure, readonly, nostack, preserves_flags),
            );
        }
        lo
    }
}

/// The AES-128 key schedule (FIPS 197, 5.2), `aeskeygenassist` giving SubWord(RotWord(w3)) ^
/// Rcon.
///
/// # Safety
/// The processor must have AES-NI ([`AesCmacKey::new`], the only caller, checks it first).
unsafe fn expand(key: u128) -> [u128; 11] {
    let mut keys = [key; 11];
    macro_rules! round {
        ($i:literal, $rcon:literal) => {{
            let prev = keys[$i - 1];
            let assist: u64;
            // SAFETY:
            // - AES-NI is present: the caller's obligation (`expand`'s `# Safety`); the other
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
    #[inline(always)] // BENCHMARKS.md, "Fingerprints"
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

    /// The input of the last encryption: the chain XOR the last block, whole with K1, or
    /// padded (0x80 then zeros) with K2.
    #[inline(always)] // BENCHMARKS.md, "Fingerprints"
    fn last_input(&self) -> u128 {
        let last = if self.len == 16 {
            self.block ^ self.key.k1
        } else {
            (self.block | 0x80 << (8 * self.len)) ^ self.key.k2
        };
        self.chain ^ last
    }

    #[cfg(test)]
    fn mac(&self) -> u128 {
        self.key.encrypt(self.last_input())
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
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.push(u64::from(i), 1);
    }

    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.push(u64::from(i), 2);
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.push(u64::from(i), 4);
    }

    #[inline(always)] // BENCHMARKS.md, "Fingerprints"
    fn write_u64(&mut self, i: u64) {
        self.push(i, 8);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.push(i as u64, 8);
    }

    #[inline(always)] // BENCHMARKS.md, "Fingerprints"
    fn finish(&self) -> u64 {
        self.key.encrypt_low(self.last_input())
    }
}

#[cfg(test)]
#[path = "aes_cmac_tests.rs"]
mod tests;
