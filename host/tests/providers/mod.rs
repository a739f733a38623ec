//! Support for the provider tests: a loopback HTTP server speaking each provider's wire
//! protocol with scripted replies and failures, and request fixtures built by the core.
#![allow(dead_code, unreachable_pub)] // each test binary uses a different part; items are test-local

pub mod fixtures;
pub mod server;
