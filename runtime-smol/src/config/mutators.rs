//! The `[mutators.*]` tables: their checks without a schema, against the room's tables
//! once known, and the mutator registry they describe.

use rindle_room_core::TableSchema;

use super::{invalid, Config, ConfigError};
use crate::mutators::declarative;
use crate::mutators::{crud, Registry};

impl Config {
    pub(super) fn validate_mutators(&self) -> Result<(), ConfigError> {
        if self.mutators.is_empty() {
            return Ok(());
        }
        let Some(writes) = &self.writes else {
            let name = self.mutators.keys().next().map_or("", String::as_str);
            return Err(invalid(
                format!("mutators.{name}"),
                "[mutators.*] is set but [writes] is not: mutators write rows, so add \
                 [writes] with the `owned_tables` they may write",
            ));
        };
        for (name, spec) in &self.mutators {
            let option = format!("mutators.{name}");
            declarative::compile(name, spec)
                .map_err(|e| invalid(&option, format!("{option}: {e}")))?;
            for table in spec.written_tables() {
                if !writes.owned_tables.iter().any(|t| t == table) {
                    return Err(invalid(
                        &option,
                        format!(
                            "{option}: writes table {table:?}, which is not in \
                             `writes.owned_tables`; add it there (mutators write only owned \
                             tables)"
                        ),
                    ));
                }
            }
            if writes.crud {
                for table in &writes.owned_tables {
                    if crud::names(table).contains(name) {
                        return Err(invalid(
                            &option,
                            format!(
                                "{option}: the name is also a generated CRUD mutator \
                                 (`writes.crud = true`); rename the mutator or set \
                                 `writes.crud = false`"
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Checks the configuration against the room's tables once they are known (the
    /// upstream hello, or the demo file): every owned table exists and every declarative
    /// mutator names existing tables and columns ([`declarative::validate`]).
    pub fn check_schema(&self, tables: &[TableSchema]) -> Result<(), ConfigError> {
        if let Some(writes) = &self.writes {
            for table in &writes.owned_tables {
                if !tables.iter().any(|t| &*t.name == table) {
                    return Err(invalid(
                        "writes.owned_tables",
                        format!(
                            "`writes.owned_tables` names {table:?}, which the room does not \
                             have (its tables: {}); fix the name or the footprint",
                            table_names(tables)
                        ),
                    ));
                }
            }
        }
        for (name, spec) in &self.mutators {
            let option = format!("mutators.{name}");
            declarative::validate(spec, tables)
                .map_err(|e| invalid(&option, format!("{option}: {e}")))?;
        }
        Ok(())
    }

    /// The mutator registry the configuration describes, once the room's tables are
    /// known: every `[mutators.*]`, plus the CRUD mutators of every owned table when
    /// `writes.crud` is set. Hosts add their own Rust mutators to it afterwards.
    pub fn registry(&self, tables: &[TableSchema]) -> Result<Registry, ConfigError> {
        self.check_schema(tables)?;
        let mut registry = Registry::new();
        if let Some(writes) = self.writes.as_ref().filter(|w| w.crud) {
            for name in &writes.owned_tables {
                if let Some(table) = tables.iter().find(|t| &*t.name == name) {
                    crud::register(&mut registry, table);
                }
            }
        }
        for (name, spec) in &self.mutators {
            let mutator = declarative::compile(name, spec).map_err(|e| {
                invalid(format!("mutators.{name}"), format!("mutators.{name}: {e}"))
            })?;
            registry.register(name.clone(), mutator);
        }
        Ok(registry)
    }
}

fn table_names(tables: &[TableSchema]) -> String {
    tables
        .iter()
        .map(|t| format!("{:?}", &*t.name))
        .collect::<Vec<_>>()
        .join(", ")
}
