//! [`ComponentRunner`]: one engine and one pre-linked component, shared by every plugin.

use std::path::Path;

use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine};

use crate::component::bindings::{Compactor, CompactorPre};
use crate::component::error::ComponentError;
use crate::component::host_state::HostState;
use crate::component::plugin::Plugin;
use crate::component::traits::{Ledger, Provider};

/// Limits every plugin call runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunnerLimits {
    /// Fuel (roughly, wasm instructions) one exported call may use.
    pub fuel_per_call: u64,
    /// Cap on the plugin's linear memory, in bytes.
    pub memory_bytes: usize,
}

impl Default for RunnerLimits {
    /// 20 billion units of fuel per call (seconds of work, far above any real compaction) and
    /// 256 MiB of memory.
    fn default() -> Self {
        Self { fuel_per_call: 20_000_000_000, memory_bytes: 256 << 20 }
    }
}

/// A compiled, pre-linked `compactor` component. Cheap to share; each [`Plugin`] made from it
/// has its own store, instance, ledger and provider.
#[derive(Clone)]
pub struct ComponentRunner {
    engine: Engine,
    pre: CompactorPre<HostState>,
    limits: RunnerLimits,
}

impl std::fmt::Debug for ComponentRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComponentRunner").field("limits", &self.limits).finish_non_exhaustive()
    }
}

impl ComponentRunner {
    /// The engine configuration: fuel metering on.
    fn engine() -> Result<Engine, ComponentError> {
        let mut config = Config::new();
        config.consume_fuel(true);
        Engine::new(&config).map_err(|e| ComponentError::Load(format!("{e:#}")))
    }

    /// Loads a component file (the output of `wasm-tools component new`).
    pub fn from_file(path: impl AsRef<Path>, limits: RunnerLimits) -> Result<Self, ComponentError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path)
            .map_err(|e| ComponentError::Load(format!("{}: {e}", path.display())))?;
        Self::from_bytes(&bytes, limits)
    }

    /// Loads a component from its bytes.
    pub fn from_bytes(bytes: &[u8], limits: RunnerLimits) -> Result<Self, ComponentError> {
        let engine = Self::engine()?;
        let component =
            Component::new(&engine, bytes).map_err(|e| ComponentError::Load(format!("{e:#}")))?;
        let mut linker: Linker<HostState> = Linker::new(&engine);
        Compactor::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |state| state)
            .map_err(|e| ComponentError::Instantiate(format!("{e:#}")))?;
        let instance_pre = linker
            .instantiate_pre(&component)
            .map_err(|e| ComponentError::Instantiate(format!("{e:#}")))?;
        let pre = CompactorPre::new(instance_pre)
            .map_err(|e| ComponentError::Instantiate(format!("{e:#}")))?;
        Ok(Self { engine, pre, limits })
    }

    /// The limits plugins run under.
    pub fn limits(&self) -> RunnerLimits {
        self.limits
    }

    /// A plugin serving one host's ledger and provider.
    pub fn plugin(
        &self,
        ledger: impl Ledger + 'static,
        provider: impl Provider + 'static,
    ) -> Plugin {
        Plugin::new(
            self.engine.clone(),
            self.pre.clone(),
            self.limits,
            Box::new(ledger),
            Box::new(provider),
        )
    }
}
