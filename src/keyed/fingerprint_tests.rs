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

#[test]
fn a_key_under_each_quota_has_its_own_fingerprint() {
    use crate::quota::Quota;
    let fp = Fingerprinter::new(FingerprintHash::SipHash13).fingerprint(&7u64);
    let quotas = [
        Quota::per_second(10),
        Quota::per_second(10).with_burst(11),
        Quota::per_second(11).with_burst(10),
        Quota::per_minute(10),
    ];
    let ids: std::collections::HashSet<u64> = quotas.iter().map(|q| under_quota(fp, q)).collect();
    assert_eq!(ids.len(), quotas.len());
    assert!(!ids.contains(&fp));
}
