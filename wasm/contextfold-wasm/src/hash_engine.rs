//! [`BindingEngine`]: the SHA-256 engine behind every digest the package computes.
//!
//! WebAssembly has no SHA instructions, so `sha2` runs its portable code there, several times
//! slower than the native core (which uses SHA-NI). Node's `crypto` does use them. The Node entry
//! point of the package therefore registers a factory of hash objects
//! (`() => crypto.createHash('sha256')`) with [`use_hash_factory`], and every hasher created
//! afterwards hands its 16 KiB chunks of canonical bytes to such an object: one boundary call
//! per chunk, the bytes read in place from wasm memory. Browsers have no incremental SHA-256
//! (SubtleCrypto hashes whole buffers, asynchronously), so there, and natively, no factory is
//! registered and the engine is the core's own [`Sha2Engine`]. The digests are identical: both
//! are plain SHA-256 of the same bytes (the conformance vectors run on both paths).

use std::cell::RefCell;

use contextfold_core::digest::{HashEngine, Sha2Engine};
use js_sys::{Function, Uint8Array};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    /// A JavaScript SHA-256 hash object with the interface of Node's `crypto.Hash`.
    #[derive(Debug)]
    pub type JsHash;

    /// `hash.update(bytes)`: absorbs a view of wasm memory (Node copies nothing it keeps).
    #[wasm_bindgen(method)]
    fn update(this: &JsHash, bytes: &[u8]);

    /// `hash.copy()`: an independent hash object in the same state.
    #[wasm_bindgen(method)]
    fn copy(this: &JsHash) -> JsHash;

    /// `hash.digest()`: the 32-byte SHA-256 (the object is finished afterwards).
    #[wasm_bindgen(method)]
    fn digest(this: &JsHash) -> Uint8Array;
}

thread_local! {
    /// The registered factory of JavaScript hash objects, if any (wasm is single-threaded).
    static FACTORY: RefCell<Option<Function>> = const { RefCell::new(None) };
}

/// Registers (or, with `undefined`, removes) the factory of SHA-256 hash objects that digests
/// use from now on: a function returning a fresh object with Node's `crypto.Hash` interface
/// (`update(Uint8Array)`, `copy()`, `digest()`). Hashers already created keep their engine.
#[wasm_bindgen(js_name = useHashFactory)]
pub fn use_hash_factory(factory: Option<Function>) {
    FACTORY.with(|slot| *slot.borrow_mut() = factory);
}

/// Whether digests are computed by a registered JavaScript hash object (`true`) or by the
/// portable SHA-256 compiled into the module (`false`).
#[wasm_bindgen(js_name = hashEngineIsHost)]
pub fn hash_engine_is_host() -> bool {
    matches!(BindingEngine::default(), BindingEngine::Host(_))
}

/// The package's [`HashEngine`]: a JavaScript hash object when a factory is registered,
/// otherwise the core's [`Sha2Engine`].
#[derive(Debug)]
pub enum BindingEngine {
    /// `sha2` compiled into the module.
    Wasm(Sha2Engine),
    /// A hash object from the registered factory.
    Host(JsHash),
}

/// A fresh hash object from the registered factory, if there is one and it returned an object
/// with the three methods the engine calls.
fn host_hash() -> Option<JsHash> {
    let hash = FACTORY.with(|slot| slot.borrow().as_ref()?.call0(&JsValue::UNDEFINED).ok())?;
    let has_method = |name: &str| {
        js_sys::Reflect::get(&hash, &JsValue::from_str(name)).is_ok_and(|m| m.is_function())
    };
    (has_method("update") && has_method("copy") && has_method("digest"))
        .then(|| hash.unchecked_into())
}

impl Default for BindingEngine {
    fn default() -> Self {
        match host_hash() {
            Some(hash) => BindingEngine::Host(hash),
            None => BindingEngine::Wasm(Sha2Engine::default()),
        }
    }
}

impl Clone for BindingEngine {
    fn clone(&self) -> Self {
        match self {
            BindingEngine::Wasm(engine) => BindingEngine::Wasm(engine.clone()),
            BindingEngine::Host(hash) => BindingEngine::Host(hash.copy()),
        }
    }
}

impl HashEngine for BindingEngine {
    fn update(&mut self, bytes: &[u8]) {
        match self {
            BindingEngine::Wasm(engine) => engine.update(bytes),
            BindingEngine::Host(hash) => hash.update(bytes),
        }
    }

    fn finish(self) -> [u8; 32] {
        match self {
            BindingEngine::Wasm(engine) => engine.finish(),
            BindingEngine::Host(hash) => {
                let digest = hash.digest();
                // A factory returning anything but SHA-256 objects is a bug of the embedder:
                // fail loudly (an `internal_error` in JS) rather than return a wrong digest.
                assert_eq!(digest.length(), 32, "the registered hash object is not SHA-256");
                let mut out = [0; 32];
                digest.copy_to(&mut out);
                out
            }
        }
    }
}
