use super::*;

#[test]
fn a_marked_key_is_held_and_few_others_are() {
    let seen = Seen::new(10_000);
    for tag in 0..10_000u64 {
        seen.mark(tag * 7_919 + 3);
    }
    assert!((0..10_000u64).all(|tag| seen.holds(tag * 7_919 + 3)));
    let false_positives = (1_000_000..1_100_000u64).filter(|&t| seen.holds(t)).count();
    assert!(
        false_positives < 3_000,
        "{false_positives} of 100,000 unmarked keys held"
    );
}

#[test]
fn a_key_is_forgotten_after_two_generations() {
    let seen = Seen::new(100);
    seen.mark(1);
    for tag in 2..102 {
        seen.mark(tag); // fills the first generation: the second becomes current
    }
    assert!(seen.holds(1), "forgotten after one generation");
    for tag in 102..202 {
        seen.mark(tag);
    }
    assert!(!seen.holds(1), "still held after two generations");
}
