//! A SHA-256 engine that hashes on a second thread while the caller serializes.
//!
//! The core's [`PrefixHasher`](contextfold_core::digest::PrefixHasher) spends its time in two
//! places: writing the canonical JSON of each event (escaping strings) and SHA-256 itself. The
//! core is single-threaded by design (it also runs in WebAssembly), but it takes the SHA-256
//! implementation as a [`HashEngine`]. [`PipelinedSha256`] is that engine for a native host:
//! once a prefix grows past [`PIPELINE_THRESHOLD`] bytes it moves the hash state to a worker
//! thread and hands it the canonical bytes in [`CHUNK_SIZE`] chunks over a bounded channel,
//! so serialization and hashing overlap and a cold verification costs about the larger of the
//! two instead of their sum. The digest is plain SHA-256 of the same bytes, byte for byte.
//!
//! Small prefixes never start a thread. If a thread cannot be started the engine keeps
//! hashing inline; the result is the same either way.

use std::sync::mpsc::{Receiver, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;

use contextfold_core::digest::HashEngine;
use sha2::{Digest, Sha256};

/// Bytes absorbed inline before the engine starts its worker (a thread costs tens of
/// microseconds; below this a prefix hashes faster than the thread starts).
pub const PIPELINE_THRESHOLD: u64 = 1 << 20;

/// Bytes handed to the worker per message.
pub const CHUNK_SIZE: usize = 64 * 1024;

/// Chunks in flight between the caller and the worker (the caller waits when all are queued).
const CHUNKS_IN_FLIGHT: usize = 4;

/// A [`HashEngine`] computing SHA-256 on a worker thread for large inputs; see the module docs.
#[derive(Debug, Default)]
pub struct PipelinedSha256 {
    mode: Mode,
    /// Bytes not yet sent to the worker (pipelined mode only).
    chunk: Vec<u8>,
    /// Bytes absorbed so far.
    absorbed: u64,
}

#[derive(Debug)]
enum Mode {
    /// Hashing on the caller's thread; `may_start`: a worker may take over past the threshold.
    Inline { hasher: Sha256, may_start: bool },
    /// Hashing on the worker; the state lives there.
    Pipelined(Worker),
}

impl Default for Mode {
    fn default() -> Self {
        Mode::Inline { hasher: Sha256::new(), may_start: true }
    }
}

/// What the caller sends to the worker.
enum Message {
    /// Bytes to absorb; the buffer comes back on the recycle channel.
    Bytes(Vec<u8>),
    /// Reply with a copy of the state after every earlier message.
    Snapshot(SyncSender<Sha256>),
}

/// The worker thread and its channels.
#[derive(Debug)]
struct Worker {
    to_worker: Option<SyncSender<Message>>,
    recycled: Receiver<Vec<u8>>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Moves `state` to a new thread, or gives it back if no thread can be started.
    fn start(state: Sha256) -> Result<Self, Sha256> {
        let (to_worker, inbox) = sync_channel::<Message>(CHUNKS_IN_FLIGHT);
        let (recycle, recycled) = channel::<Vec<u8>>();
        // A failed spawn drops the closure and the state in it: keep a copy to give back.
        let backup = state.clone();
        let thread =
            std::thread::Builder::new().name("contextfold-sha256".into()).spawn(move || {
                let mut hasher = state;
                for message in inbox {
                    match message {
                        Message::Bytes(mut bytes) => {
                            hasher.update(&bytes);
                            bytes.clear();
                            // The caller may be gone; an unused buffer is simply dropped.
                            let _ = recycle.send(bytes);
                        }
                        Message::Snapshot(reply) => {
                            let _ = reply.send(hasher.clone());
                        }
                    }
                }
            });
        match thread {
            Ok(thread) => Ok(Self { to_worker: Some(to_worker), recycled, thread: Some(thread) }),
            Err(_) => Err(backup),
        }
    }

    /// Sends one message. The worker only stops when its inbox closes (on drop), and SHA-256
    /// cannot fail, so a closed channel means the worker panicked: that is a bug, not an input
    /// error, and it is reported as one.
    fn send(&self, message: Message) {
        let sent = self.to_worker.as_ref().map(|to_worker| to_worker.send(message));
        assert!(matches!(sent, Some(Ok(()))), "the SHA-256 worker thread stopped");
    }

    /// A copy of the worker's state after everything sent so far.
    fn snapshot(&self) -> Sha256 {
        let (reply, answer) = sync_channel(1);
        self.send(Message::Snapshot(reply));
        answer.recv().unwrap_or_else(|_| panic!("the SHA-256 worker thread stopped"))
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Closing the inbox ends the worker's loop; wait so no thread outlives the engine.
        self.to_worker.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl PipelinedSha256 {
    /// Whether the engine has moved its state to a worker thread.
    pub fn is_pipelined(&self) -> bool {
        matches!(self.mode, Mode::Pipelined(_))
    }

    /// Sends the pending chunk to the worker.
    fn send_chunk(&mut self) {
        let Mode::Pipelined(worker) = &self.mode else { return };
        let next = worker.recycled.try_recv().unwrap_or_else(|_| Vec::with_capacity(CHUNK_SIZE));
        let full = std::mem::replace(&mut self.chunk, next);
        worker.send(Message::Bytes(full));
    }

    /// The state over every byte absorbed so far, on this thread.
    fn current_state(&self) -> Sha256 {
        match &self.mode {
            Mode::Inline { hasher, .. } => hasher.clone(),
            Mode::Pipelined(worker) => {
                let mut state = worker.snapshot();
                state.update(&self.chunk);
                state
            }
        }
    }
}

impl Clone for PipelinedSha256 {
    /// A copy of the state that hashes inline and never starts a worker: copies are taken to
    /// read a digest (a few more bytes, then `finish`), where a thread would only cost time.
    fn clone(&self) -> Self {
        let mode = Mode::Inline { hasher: self.current_state(), may_start: false };
        Self { mode, chunk: Vec::new(), absorbed: self.absorbed }
    }
}

impl HashEngine for PipelinedSha256 {
    fn update(&mut self, bytes: &[u8]) {
        self.absorbed += bytes.len() as u64;
        if let Mode::Inline { hasher, may_start } = &mut self.mode {
            if self.absorbed < PIPELINE_THRESHOLD || !*may_start {
                hasher.update(bytes);
                return;
            }
            match Worker::start(std::mem::take(hasher)) {
                Ok(worker) => {
                    self.mode = Mode::Pipelined(worker);
                    self.chunk = Vec::with_capacity(CHUNK_SIZE);
                }
                Err(mut state) => {
                    // No thread: stay inline for good rather than retry on every call.
                    state.update(bytes);
                    self.mode = Mode::Inline { hasher: state, may_start: false };
                    return;
                }
            }
        }
        let mut rest = bytes;
        while !rest.is_empty() {
            let room = CHUNK_SIZE - self.chunk.len();
            let (now, later) = rest.split_at(room.min(rest.len()));
            self.chunk.extend_from_slice(now);
            rest = later;
            if self.chunk.len() == CHUNK_SIZE {
                self.send_chunk();
            }
        }
    }

    fn finish(self) -> [u8; 32] {
        self.current_state().finalize().into()
    }
}
