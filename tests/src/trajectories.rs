//! The real public agent trajectories of `tests/trajectories/` (SWE-agent, OpenHands, Moatless,
//! mini-swe-agent; sources and licences in `docs/trajectories.md`), converted to RuntimeEvent
//! JSONL: one file per trajectory, one folder per agent. Every test and benchmark that replays
//! them reads them through here.

use std::path::{Path, PathBuf};

use contextfold_core::RuntimeEvent;

/// One trajectory: its file and its events.
#[derive(Debug, Clone)]
pub struct Trajectory {
    /// The RuntimeEvent JSONL file.
    pub path: PathBuf,
    /// Its events, in order.
    pub events: Vec<RuntimeEvent>,
}

impl Trajectory {
    /// The session id of its events (each file is one session).
    pub fn session_id(&self) -> &str {
        self.events.first().map_or("", |e| e.session_id.as_str())
    }
}

/// The folder of the trajectories.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("trajectories")
}

/// Every RuntimeEvent JSONL file of every agent folder, sorted by path.
///
/// # Panics
/// When the committed folder cannot be read.
pub fn files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let agents = std::fs::read_dir(root()).expect("tests/trajectories");
    for agent in agents.filter_map(|entry| entry.ok().map(|e| e.path())) {
        let Ok(entries) = std::fs::read_dir(&agent) else { continue };
        files.extend(
            entries
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|path| path.extension().is_some_and(|e| e == "jsonl")),
        );
    }
    files.sort();
    files
}

/// The events of one RuntimeEvent JSONL file.
///
/// # Panics
/// When the file cannot be read or a line is not a RuntimeEvent.
pub fn load(path: &Path) -> Vec<RuntimeEvent> {
    let text = std::fs::read_to_string(path).expect("a trajectory");
    text.lines().map(|line| RuntimeEvent::from_json(line).expect("a RuntimeEvent line")).collect()
}

/// Every trajectory of [`files`], loaded.
pub fn all() -> Vec<Trajectory> {
    files().into_iter().map(|path| Trajectory { events: load(&path), path }).collect()
}
