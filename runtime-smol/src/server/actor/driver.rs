//! The room task's side of the host's calls: mutators from the registry (panics caught
//! and turned into rejections), the registry rebuilt for each incarnation's tables, and
//! each socket's backlog from its writer's counters.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

use rindle_room_core::host::{Backlog, ConnId, Driver, MutatorOutcome};
use rindle_room_core::{MutationTx, TableSchema};

use crate::config::Config;
use crate::mutators::{MutatorCtx, MutatorError, Registry};
use rindle_room_downstream::ConnOut;

/// The driver the host calls while it handles one input.
pub(crate) struct SmolDriver<'a> {
    pub registry: &'a mut Registry,
    pub host_registry: &'a Registry,
    pub config: Option<&'a Config>,
    pub conns: &'a HashMap<ConnId, ConnOut>,
}

impl Driver for SmolDriver<'_> {
    fn run_mutator(
        &mut self,
        name: &str,
        tx: &mut MutationTx<'_>,
        args: Option<&str>,
        user: &str,
    ) -> MutatorOutcome {
        let Some(mutator) = self.registry.get(name).cloned() else {
            return MutatorOutcome::Unknown;
        };
        let value: serde_json::Value = args
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or(serde_json::Value::Null);
        let ctx = MutatorCtx {
            user: user.to_string(),
        };
        let ran = catch_unwind(AssertUnwindSafe(|| mutator.run(tx, &value, &ctx)));
        match ran {
            Ok(Ok(())) => MutatorOutcome::Done,
            Ok(Err(MutatorError::Rejected(m))) => MutatorOutcome::Rejected(m),
            Ok(Err(MutatorError::Environment(m))) => MutatorOutcome::Environment(m),
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| String::from("a panic"));
                MutatorOutcome::Rejected(format!("mutator `{name}` panicked: {what}"))
            }
        }
    }

    /// The registry for this incarnation: the configuration's mutators (validated against
    /// the hello's tables), then the host's, which win on a name clash.
    fn tables_known(
        &mut self,
        tables: &[TableSchema],
    ) -> Result<(), rindle_room_core::host::TablesError> {
        let mut registry = match self.config {
            Some(config) => config
                .registry(tables)
                .map_err(|e| rindle_room_core::host::TablesError::Refused(e.to_string()))?,
            None => Registry::new(),
        };
        for name in self.host_registry.names() {
            if let Some(m) = self.host_registry.get(name) {
                registry.register_arc(name, m.clone());
            }
        }
        *self.registry = registry;
        Ok(())
    }

    fn backlog(&self, conn: ConnId) -> Backlog {
        self.conns
            .get(&conn)
            .map_or_else(Backlog::default, ConnOut::backlog)
    }
}
