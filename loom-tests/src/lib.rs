//! Loom models of cellrate's concurrent protocols live in `tests/`; run them with `run.sh`.
//!
//! Without `--cfg loom` this crate is empty, so workspace builds skip it at no cost.
