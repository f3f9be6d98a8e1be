use super::*;

#[test]
fn lanes_are_distinct_lowest_first_and_reused() {
    let lanes = Lanes::new();
    assert_eq!((lanes.take(), lanes.take(), lanes.take()), (0, 1, 2));
    lanes.give(1);
    lanes.give(0);
    assert_eq!((lanes.take(), lanes.take(), lanes.take()), (0, 1, 3));
}

#[test]
fn a_thread_keeps_its_lane_and_gives_it_back_when_it_ends() {
    let mine = current();
    assert_eq!(current(), mine);
    assert!(mine < RETIRED);
    // 400 threads, 4 alive at a time: the lanes given back are taken again, so the
    // process gives out about as many as threads live at once (other tests' threads
    // among them), not one per thread.
    for _ in 0..100 {
        let threads: Vec<_> = (0..4).map(|_| std::thread::spawn(current)).collect();
        for thread in threads {
            assert!(thread.join().unwrap() < RETIRED);
        }
    }
    let given_out = LANES.free.lock().unwrap().next;
    assert!(given_out < 100, "{given_out} lanes for 400 threads");
}
