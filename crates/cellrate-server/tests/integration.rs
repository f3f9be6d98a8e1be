//! The server's tests, modules of one binary: a server in this process on a test clock
//! (`support`), its answers (`decisions`), hostile requests (`bad_input`), config files
//! (`config_files`), reloads under load (`reload`), and the Python grpcio client of Envoy's
//! protos driving the real binary (`python`).

mod bad_input;
mod config_files;
mod decisions;
mod python;
mod redis;
mod reload;
mod support;
mod transport;
