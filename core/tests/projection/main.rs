//! The pure core's projection: digests, safe-prefix selection, prefix matching, pruning and
//! its epochs, reasoning replay, recovery, replay decisions, verified prefixes, attachments,
//! and the projection property tests. One test binary per area (issue 38): each module is a
//! former `core/tests/<name>.rs`.

mod attachments;
mod digest_vectors;
mod materialize_props;
mod prefix_match;
mod projection_props;
mod prune;
mod prune_epochs;
mod reasoning_replay;
mod recovery;
mod replay;
mod retraction;
mod safe_prefix_props;
mod verified_prefix;
