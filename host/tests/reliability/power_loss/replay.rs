//! The trace written by `trace_writes.c`, and the on-disk state a power loss at any point of
//! it leaves: a write (or truncate) survives only if a sync of the same file returned after
//! it and before the crash point; everything unsynced is dropped ([`Variant::DropUnsynced`])
//! or each unsynced write survives with probability 1/2, in any order the disk chose
//! ([`Variant::RandomUnsynced`]). Creates and unlinks are durable at once. `-shm` is never
//! materialized (it is shared memory in effect), nor the worker's marker file.

#![allow(unreachable_pub)] // a module of one test binary

use std::collections::BTreeMap;
use std::path::Path;

/// One traced operation.
#[derive(Debug, Clone)]
pub enum Op {
    /// `pwrite`/`write` of `data` at `offset`.
    Write { offset: u64, data: std::ops::Range<usize> },
    /// `ftruncate` to `size`.
    Truncate { size: u64 },
    /// `fsync`/`fdatasync` returned.
    Sync,
    /// `unlink` returned.
    Unlink,
    /// An `open` that may create the file (`truncate`: with `O_TRUNC`).
    Create { truncate: bool },
}

/// The parsed trace: operations in order, each with the name of its file.
pub struct Trace {
    /// The raw trace (write data is a range into it).
    pub bytes: Vec<u8>,
    /// `(file name, operation)` in the order they happened.
    pub ops: Vec<(String, Op)>,
}

fn take<const N: usize>(bytes: &[u8], at: &mut usize) -> [u8; N] {
    let out: [u8; N] = bytes[*at..*at + N].try_into().expect("a complete trace record");
    *at += N;
    out
}

impl Trace {
    /// Reads the trace file.
    pub fn read(path: &Path) -> Trace {
        let bytes = std::fs::read(path).expect("read the trace");
        let mut ops = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let [op] = take::<1>(&bytes, &mut at);
            let len = u32::from_ne_bytes(take(&bytes, &mut at)) as usize;
            let full = String::from_utf8(bytes[at..at + len].to_vec()).expect("utf-8 path");
            at += len;
            let a = u64::from_ne_bytes(take(&bytes, &mut at));
            let b = u64::from_ne_bytes(take(&bytes, &mut at));
            let name = full.rsplit('/').next().expect("a file name").to_owned();
            let op = match op {
                1 => {
                    let data = at..at + b as usize;
                    at += b as usize;
                    Op::Write { offset: a, data }
                }
                2 => Op::Truncate { size: a },
                3 => Op::Sync,
                4 => Op::Unlink,
                5 => Op::Create { truncate: a == 1 },
                other => panic!("unknown trace op {other}"),
            };
            ops.push((name, op));
        }
        Trace { bytes, ops }
    }
}

/// Which unsynced writes a power loss keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// None of them.
    DropUnsynced,
    /// Each with probability 1/2 (seeded), applied in trace order.
    RandomUnsynced(u64),
}

#[derive(Default, Clone)]
struct FileState {
    durable: Vec<u8>,
    /// Indexes into `Trace::ops` of writes/truncates since the last sync.
    pending: Vec<usize>,
}

fn apply(content: &mut Vec<u8>, trace: &Trace, op: &Op) {
    match op {
        Op::Write { offset, data } => {
            let (offset, data) = (*offset as usize, &trace.bytes[data.clone()]);
            if content.len() < offset + data.len() {
                content.resize(offset + data.len(), 0);
            }
            content[offset..offset + data.len()].copy_from_slice(data);
        }
        Op::Truncate { size } => content.resize(*size as usize, 0),
        _ => {}
    }
}

/// The durable state of every file, advanced through the trace one crash point at a time.
pub struct Disk<'t> {
    trace: &'t Trace,
    files: BTreeMap<String, FileState>,
    next: usize,
}

impl<'t> Disk<'t> {
    /// The disk before the first traced operation (no files).
    pub fn new(trace: &'t Trace) -> Self {
        Disk { trace, files: BTreeMap::new(), next: 0 }
    }

    /// Runs the operations before `point` (points must not decrease).
    pub fn advance_to(&mut self, point: usize) {
        assert!(point >= self.next, "crash points in order");
        for index in self.next..point {
            let (name, op) = &self.trace.ops[index];
            match op {
                Op::Create { truncate } => {
                    let file = self.files.entry(name.clone()).or_default();
                    if *truncate {
                        *file = FileState::default();
                    }
                }
                Op::Unlink => {
                    self.files.remove(name);
                }
                Op::Write { .. } | Op::Truncate { .. } => {
                    self.files.entry(name.clone()).or_default().pending.push(index)
                }
                Op::Sync => {
                    if let Some(file) = self.files.get_mut(name) {
                        for pending in std::mem::take(&mut file.pending) {
                            apply(&mut file.durable, self.trace, &self.trace.ops[pending].1);
                        }
                    }
                }
            }
        }
        self.next = point;
    }

    /// Writes what a power loss now would leave into the empty directory `dir`.
    pub fn materialize(&self, dir: &Path, variant: Variant, skip: &[&str]) {
        let mut rng = match variant {
            Variant::DropUnsynced => None,
            Variant::RandomUnsynced(seed) => Some(seed | 1),
        };
        for (name, file) in &self.files {
            if name.ends_with("-shm") || skip.contains(&name.as_str()) {
                continue;
            }
            let mut content = file.durable.clone();
            if let Some(state) = rng.as_mut() {
                for &pending in &file.pending {
                    // xorshift64
                    *state ^= *state << 13;
                    *state ^= *state >> 7;
                    *state ^= *state << 17;
                    if *state & 1 == 1 {
                        apply(&mut content, self.trace, &self.trace.ops[pending].1);
                    }
                }
            }
            std::fs::write(dir.join(name), content).expect("materialize a file");
        }
    }
}
