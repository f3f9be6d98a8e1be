//! Tests of AES-128-CMAC: RFC 4493's subkeys and MACs, MACs of other lengths, messages split
//! at every byte, integer writes, and distinct fingerprints of short keys.

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

/// The RFC's key, or `None` without AES-NI (a failure instead when the environment sets
/// `CELLRATE_REQUIRE_AES_NI`, as `.ci/run` does on processors that have it).
fn key() -> Option<AesCmacKey> {
    let key = AesCmacKey::new(block(KEY));
    if key.is_none() {
        let required = std::env::var_os("CELLRATE_REQUIRE_AES_NI").is_some();
        assert!(
            !required,
            "CELLRATE_REQUIRE_AES_NI is set, but AES-NI is not detected"
        );
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
    // RFC 4493's four examples, then prefixes of lengths that are not whole 8-byte words
    // (MACs from Python's `cryptography` package), which test the padding of partial words.
    for (len, mac) in [
        (0, "bb1d6929e95937287fa37d129b756746"),
        (16, "070a16b46b4d4144f79bdd9dd04a287c"),
        (40, "dfa66747de9ae63030ca32611497c827"),
        (64, "51f0bebf7e3b9d92fc49741779363cfe"),
        (1, "8e48c3c1d9f1c17c295c7aefd232bb14"),
        (7, "9abc867939985e562479f0dc84562fd0"),
        (9, "a7f3a7d444e5a80da475c0a1f5dc39ee"),
        (15, "f212d4c2154c8766de60c18c98fa0c93"),
        (17, "bc72cc168ec5a1434dcdb20bc1a2c2a4"),
        (31, "8a157acff517d21bcd6ab65cd014cc70"),
    ] {
        let mut cmac = AesCmac::new(&key);
        cmac.write(&message[..len]);
        assert_eq!(cmac.mac(), block(mac), "{len} bytes");
        assert_eq!(cmac.finish(), block(mac) as u64, "{len} bytes, finish");
    }
}

#[test]
fn short_keys_have_distinct_fingerprints() {
    let Some(key) = key() else { return };
    let mut seen: Vec<u64> = (0..=u8::MAX).map(|b| key.fingerprint(&b)).collect();
    seen.extend((0..=u16::MAX).map(|b| key.fingerprint(&b)));
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 256 + 65_536);
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

/// Thousands of random keys and messages of every length up to 100 bytes, written in random
/// pieces, against RustCrypto's AES-128 and CMAC.
#[test]
fn macs_match_rustcrypto_on_random_keys_and_messages() {
    use cmac::Mac;
    if key().is_none() {
        return;
    }
    let mut rng = fastrand::Rng::with_seed(0x5eed_c3ac);
    for round in 0..4_000 {
        let key_bytes: [u8; 16] = core::array::from_fn(|_| rng.u8(..));
        let ours = AesCmacKey::new(u128::from_le_bytes(key_bytes)).expect("AES-NI present");
        let len = round % 101;
        let message: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
        let mut cmac = AesCmac::new(&ours);
        let mut rest = &message[..];
        while !rest.is_empty() {
            let (piece, tail) = rest.split_at(rng.usize(..=rest.len()));
            cmac.write(piece);
            rest = tail;
        }
        let mut theirs = <cmac::Cmac<aes::Aes128> as Mac>::new_from_slice(&key_bytes).unwrap();
        theirs.update(&message);
        let expected = u128::from_le_bytes(theirs.finalize().into_bytes().into());
        assert_eq!(cmac.mac(), expected, "key {key_bytes:02x?}, {len} bytes");
    }
}
