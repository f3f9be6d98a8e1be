//! The server's tests, modules of one binary: a server in this process on a test clock
//! (`support`), its answers (`decisions`), hostile requests (`bad_input`), config files
//! (`config_files`), Redis storage (`redis`), TLS and the connection bound (`transport`), and
//! the Python grpcio client of Envoy's protos driving the real binary (`python`). Reloads
//! under load are a binary of their own, `reload_memory.rs`, which measures its process's
//! memory.

mod bad_input;
mod cell_model;
mod config_files;
mod decisions;
mod python;
mod redis;
mod resp_bad_input;
mod resp_client;
mod resp_clients;
mod resp_commands;
mod support;
mod throttle_replies;
mod transport;
