//! Room mutators without JavaScript: the Rust API ([`Mutator`], [`Registry`]), the
//! declarative mutators of the config file ([`declarative`]), and generated CRUD
//! mutators per owned table ([`crud`]).
//!
//! A mutator is deterministic and replayable (it is
//! re-invoked on journal replay): a pure function of the base, its args and the
//! authenticated user.

pub mod crud;
pub mod declarative;

use std::collections::BTreeMap;
use std::sync::Arc;

use rindle_room_core::{ErrorCode, MutationTx};
use serde_json::Value;

/// The ambient context a mutator runs under (the published room's `RoomMutatorCtx`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MutatorCtx {
    /// The authenticated subject (the lease token's `sub`; `""` = unauthenticated).
    pub user: String,
}

/// Why a mutator did not complete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MutatorError {
    /// A final rejection (authorization, validation, a refused write): the mid is
    /// consumed with no effects and the client is told `rejected` with this reason.
    Rejected(String),
    /// The mutator needed a capability rooms lack (`tx.query`): a `deopt` with reason
    /// `environment`; the client re-routes the mutation.
    Environment(String),
}

impl From<rindle_room_core::Error> for MutatorError {
    fn from(e: rindle_room_core::Error) -> MutatorError {
        if e.code() == ErrorCode::Environment {
            MutatorError::Environment(e.message().to_string())
        } else {
            MutatorError::Rejected(e.message().to_string())
        }
    }
}

/// A named room mutator.
pub trait Mutator: Send + Sync + 'static {
    /// Runs against the open transaction. Writes go through `tx`; returning an error
    /// discards them.
    fn run(
        &self,
        tx: &mut MutationTx<'_>,
        args: &Value,
        ctx: &MutatorCtx,
    ) -> Result<(), MutatorError>;
}

impl<F> Mutator for F
where
    F: Fn(&mut MutationTx<'_>, &Value, &MutatorCtx) -> Result<(), MutatorError>
        + Send
        + Sync
        + 'static,
{
    fn run(
        &self,
        tx: &mut MutationTx<'_>,
        args: &Value,
        ctx: &MutatorCtx,
    ) -> Result<(), MutatorError> {
        self(tx, args, ctx)
    }
}

/// Mutators by name.
#[derive(Clone, Default)]
pub struct Registry {
    mutators: BTreeMap<String, Arc<dyn Mutator>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.mutators.keys()).finish()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Registers (or replaces) a mutator.
    pub fn register(&mut self, name: impl Into<String>, mutator: impl Mutator) -> &mut Registry {
        self.mutators.insert(name.into(), Arc::new(mutator));
        self
    }

    /// Registers a shared mutator.
    pub fn register_arc(&mut self, name: impl Into<String>, mutator: Arc<dyn Mutator>) {
        self.mutators.insert(name.into(), mutator);
    }

    /// A mutator by name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Mutator>> {
        self.mutators.get(name)
    }

    /// The registered names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.mutators.keys().map(String::as_str)
    }

    /// How many mutators are registered.
    pub fn len(&self) -> usize {
        self.mutators.len()
    }

    /// Whether no mutator is registered.
    pub fn is_empty(&self) -> bool {
        self.mutators.is_empty()
    }
}
