//! The pure core's compaction: provider-native compaction, the native trajectories, Responses
//! imports and summary requests, validation and the summary corpus.

mod native;
mod native_trajectories;
mod responses_import;
mod summary;
