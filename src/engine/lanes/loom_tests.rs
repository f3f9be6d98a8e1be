//! A model of the lanes of striped counts (`lanes.rs`, `tally.rs`): a lane's holder adds to
//! its line with a load and a store, which is exact only while no other thread holds the lane,
//! and only if the new holder of a lane given back starts from the count the old one left.
//! Every count added must be in the sums.
//!
//! The twin's registry hands out a lane given back without taking it off the free ones, so
//! that two threads hold it at once: one's load and store undoes the other's add.

use super::{Lanes, Reverse};
use crate::engine::tally::StripedCounts;
use loom::sync::Arc;
use loom::thread;
use std::sync::PoisonError;

/// The twin's [`Lanes::take`]: the lowest lane given back, left among the free ones.
fn take_leaving_it_free(lanes: &Lanes) -> usize {
    let free = lanes.free.lock().unwrap_or_else(PoisonError::into_inner);
    match free.returned.peek() {
        Some(Reverse(lane)) => *lane,
        None => {
            drop(free);
            lanes.take()
        }
    }
}

/// A tally with one lane and its shared line. A thread that has ended held lane 0 and counted
/// once in it; then two threads each take a lane, count twice and give it back. One of them
/// gets lane 0 (from its old holder, through the registry), the other lane 1, past the
/// tally's lanes: its adds go to the shared line. The sum must be all five.
fn lanes_model(broken: bool) {
    let lanes = Arc::new(Lanes::new());
    let counts = Arc::new(StripedCounts::<1>::with_lanes(1));
    let ended = lanes.take();
    counts.add_in(ended, 0);
    lanes.give(ended);
    let counter = || {
        let (lanes, counts) = (lanes.clone(), counts.clone());
        thread::spawn(move || {
            let lane = if broken {
                take_leaving_it_free(&lanes)
            } else {
                lanes.take()
            };
            counts.add_in(lane, 0);
            counts.add_in(lane, 0);
            lanes.give(lane);
        })
    };
    let (a, b) = (counter(), counter());
    a.join().unwrap();
    b.join().unwrap();
    assert_eq!(counts.sums(), [5], "a count was lost");
}

#[test]
fn every_count_of_lanes_changing_hands_is_kept() {
    loom::model(|| lanes_model(false));
}

#[test]
#[should_panic(expected = "a count was lost")]
fn a_lane_held_twice_loses_counts() {
    loom::model(|| lanes_model(true));
}
