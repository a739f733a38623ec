//! Every failure row and reason code of the compaction transaction, driven through a scripted
//! host with an in-memory ledger (issue 3, "Failure semantics and diagnostics").

mod active_turn;
mod coverage;
mod driver;
mod lifecycle;
mod live_head;
mod malformed;
mod native;
mod prepared;
mod quality;
mod rows;
mod smaller_window;
mod support;
