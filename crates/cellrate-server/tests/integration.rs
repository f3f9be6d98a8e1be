//! The server's tests, modules of one binary: a server in this process on a test clock
//! (`support`), its answers (`decisions`), hostile requests (`bad_input`), config files
//! (`config_files`), Redis storage (`redis`), TLS and the connection bound (`transport`), and
//! the Python grpcio client of Envoy's protos driving the real binary (`python`); for RESP,
//! `CL.THROTTLE`'s replies against redis-cell's arithmetic (`throttle_replies`, `cell_model`),
//! the other commands (`resp_commands`), hostile input (`resp_bad_input`), and clients
//! written by others (`resp_clients`), over a client of the tests' own (`resp_client`); and
//! the JSON endpoints (`json_http`). Reloads under load are a binary of their own,
//! `reload_memory.rs`, which measures its process's memory.

mod bad_input;
mod cell_model;
mod config_files;
mod decisions;
mod json_http;
mod python;
mod redis;
mod resp_bad_input;
mod resp_client;
mod resp_clients;
mod resp_commands;
mod support;
mod throttle_replies;
mod transport;
