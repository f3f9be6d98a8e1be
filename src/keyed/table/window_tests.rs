use super::super::memory::zeroed_slots;
use super::super::slot::Slot;
use super::window;

/// Every window of every small table visits slot `(home + i) % n` at position `i`.
#[test]
fn visits_the_window_in_probing_order() {
    for n in 1..=6 {
        let slots = zeroed_slots(n).unwrap();
        for home in 0..n {
            for len in 0..=n {
                let seen: Vec<(usize, *const Slot)> = window(&slots, home, len)
                    .map(|(i, slot)| (i, slot as *const _))
                    .collect();
                let expected: Vec<(usize, *const Slot)> = (0..len)
                    .map(|i| (i, &slots[(home + i) % n] as *const _))
                    .collect();
                assert_eq!(seen, expected, "n {n}, home {home}, len {len}");
            }
        }
    }
}
