//! The server's tests, modules of one binary.
