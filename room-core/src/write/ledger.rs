//! Enabling the write plane, the `_rindle_client_mutations` ledger, and the watermark
//! reads.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use hashbrown::HashMap;
use serde_json::Value as Json;

use crate::ast::{Cond, Query};
use crate::error::{Error, ErrorCode};
use crate::predicate::{Lit, Pred, SimpleOp};
use crate::room::Room;
use crate::schema::TableSchema;
use crate::serve::Subscribed;
use crate::store::{Row, UserCatalog};
use crate::value::Value;

use super::scope::{compile_scopes, owned_tables, Mode};
use super::{WritePlane, LEDGER_COLUMNS, LEDGER_TABLE};

impl Room {
    /// `enableWrites(owned)`: the v1 table-granular write plane over `owned`. Once, on a
    /// live store; registers the ledger.
    pub fn enable_writes(&mut self, owned: &[&str]) -> Result<(), Error> {
        self.check_enable("enableWrites")?;
        let owned = owned_tables(owned, &UserCatalog(&self.store))?;
        self.install_writes(Mode::V1 { owned })
    }

    /// `enableWritesV2(specs)`: the gated write plane. `owned`, when given, bounds the
    /// writable tables (a wider scope is refused). Nothing is enabled on any error.
    pub fn enable_writes_v2(&mut self, specs: &Json, owned: Option<&[&str]>) -> Result<(), Error> {
        self.check_enable("enableWritesV2")?;
        let catalog = UserCatalog(&self.store);
        let owned = match owned {
            Some(names) => Some(owned_tables(names, &catalog)?),
            None => None,
        };
        let scopes = compile_scopes(specs, owned.as_deref(), &catalog)?;
        self.install_writes(Mode::V2 { scopes })
    }

    fn check_enable(&self, call: &str) -> Result<(), Error> {
        self.require_live()
            .map_err(|e| Error::new(e.code(), format!("{call}: {}", e.message())))?;
        if self.writes.is_some() {
            return Err(Error::new(
                ErrorCode::WrongState,
                "the write plane is already enabled (enable it once per room)",
            ));
        }
        if self.store.table_id(LEDGER_TABLE).is_some() {
            return Err(Error::new(
                ErrorCode::InvalidScope,
                format!("the upstream hello already has a table named {LEDGER_TABLE}"),
            ));
        }
        Ok(())
    }

    fn install_writes(&mut self, mode: Mode) -> Result<(), Error> {
        let ledger = self
            .store
            .add_table(TableSchema::new(LEDGER_TABLE, &LEDGER_COLUMNS, &[0]));
        self.engine.add_table();
        self.writes = Some(WritePlane::new(mode, ledger));
        Ok(())
    }

    pub(crate) fn writes_ref(&self) -> Result<&WritePlane, Error> {
        self.writes.as_ref().ok_or_else(no_write_plane)
    }

    pub(crate) fn writes_mut(&mut self) -> Result<&mut WritePlane, Error> {
        self.writes.as_mut().ok_or_else(no_write_plane)
    }

    /// Whether a write plane is enabled.
    pub fn writes_enabled(&self) -> bool {
        self.writes.is_some()
    }

    /// `appliedMid(client)`: the dedup watermark (0 if none).
    pub fn applied_mid(&self, client: &str) -> u64 {
        self.writes.as_ref().map_or(0, |w| w.marks(client).applied)
    }

    /// `ackedLmid(client)`: the ledger row's value (0 if none).
    pub fn acked_lmid(&self, client: &str) -> u64 {
        self.writes.as_ref().map_or(0, |w| w.marks(client).acked)
    }

    /// `durableLmid(client)`: what the authority committed (0 if none).
    pub fn durable_lmid(&self, client: &str) -> u64 {
        self.writes.as_ref().map_or(0, |w| w.marks(client).durable)
    }

    /// `pendingLen()`: processed mutations (applied or not) not yet durable.
    pub fn pending_len(&self) -> usize {
        self.writes.as_ref().map_or(0, |w| w.pending.len())
    }

    /// `dirtyLen()`: keys whose net effect the authority does not hold yet.
    pub fn dirty_len(&self) -> usize {
        self.writes.as_ref().map_or(0, |w| w.dirty.len())
    }

    /// `flushInFlight()`.
    pub fn flush_in_flight(&self) -> bool {
        self.writes.as_ref().is_some_and(|w| w.flight.is_some())
    }

    /// `ack(entries)`: advances the ledger rows for journal-committed `(client, mid)`s
    /// as one local commit. Returns the new `headCv`, or `None` when everything was
    /// already covered. Drain next.
    pub fn ack(&mut self, entries: &[(String, u64)]) -> Result<Option<u64>, Error> {
        self.require_live()?;
        let w = self.writes_ref()?;
        for (client, mid) in entries {
            let applied = w.marks(client).applied;
            if *mid > applied {
                return Err(Error::new(
                    ErrorCode::WrongState,
                    format!(
                        "ack for {client} mid {mid} is beyond its applied watermark {applied}: \
                         only processed mutations can be acked"
                    ),
                ));
            }
        }
        // The raises in first-seen order, and each client's slot among them: a group
        // commit can hold thousands of clients, so no linear search per entry.
        let mut raised: Vec<(String, u64)> = Vec::new();
        let mut slots: HashMap<&str, usize> = HashMap::new();
        for (client, mid) in entries {
            match slots.get(client.as_str()) {
                Some(&i) => raised[i].1 = raised[i].1.max(*mid),
                None => {
                    if *mid > self.acked_lmid(client) {
                        slots.insert(client, raised.len());
                        raised.push((client.clone(), *mid));
                    }
                }
            }
        }
        Ok(self.write_ledger(&raised))
    }

    /// `seedDurable(seeds)`: the boot probe's durable lmids. Seeded mids dedup on replay;
    /// the ledger rows ride one local commit. Returns the new `headCv` or `None`.
    pub fn seed_durable(&mut self, seeds: &[(String, u64)]) -> Result<Option<u64>, Error> {
        self.require_live()?;
        let w = self.writes_mut()?;
        for (client, lmid) in seeds {
            let m = w.marks_mut(client);
            m.durable = m.durable.max(*lmid);
            m.applied = m.applied.max(*lmid);
        }
        // Mids the authority already holds are no longer pending (the published room
        // keeps counting them until a flush settles — which may never come when nothing
        // is left to flush; `docs/compat.md`).
        w.retire_pending();
        let raised: Vec<(String, u64)> = seeds
            .iter()
            .filter(|(c, lmid)| *lmid > self.acked_lmid(c))
            .cloned()
            .collect();
        Ok(self.write_ledger(&raised))
    }

    /// Writes ledger rows `[client, mid]` (each a raise) as one local commit.
    fn write_ledger(&mut self, raised: &[(String, u64)]) -> Option<u64> {
        let w = self.writes.as_mut()?;
        let ledger = w.ledger;
        let mut rows = Vec::new();
        for (client, mid) in raised {
            let m = w.marks_mut(client);
            if *mid > m.acked {
                m.acked = *mid;
                rows.push((client, *mid));
            }
        }
        if rows.is_empty() {
            return None;
        }
        for (client, mid) in rows {
            let row: crate::Row =
                Row::from(alloc::vec![Value::str(client), Value::num(mid as f64)]);
            match self.store.find(ledger, &row) {
                Some(rid) => self.replace_row(ledger, rid, row),
                None => {
                    // The key was just looked up and is absent: the insert cannot refuse.
                    let _ = self.insert_row(ledger, row);
                }
            }
        }
        self.head_cv += 1;
        Some(self.head_cv)
    }

    /// `lmidSubscribe(sub, epoch, client)`: subscribes `sub` to the ledger row of
    /// `client` (`_rindle_client_mutations WHERE client_id = client`), composed here —
    /// identity comes from the connection, never from client args.
    pub fn lmid_subscribe(
        &mut self,
        sub: &str,
        epoch: u64,
        client: &str,
        now_ms: u64,
    ) -> Result<Subscribed, Error> {
        // The published room's order: the write plane, then the store.
        let query = self.lmid_query(client)?;
        self.require_live()
            .map_err(|_| Error::store_not_live("lmid subscribe"))?;
        self.subscribe(sub, epoch, &query, now_ms)
    }

    /// The lmid system query of `client`, as [`Room::lmid_subscribe`] composes it (for a
    /// host that checks [`Room::is_materialized`] before subscribing).
    pub fn lmid_query(&self, client: &str) -> Result<Query, Error> {
        let ledger = self.writes_ref()?.ledger;
        let lit = Lit::Str(client.into());
        let pred = Pred::compile(SimpleOp::Eq, lit.clone())
            .map_err(|e| Error::new(ErrorCode::Internal, e))?;
        Ok(Query {
            table: ledger,
            filter: Some(Cond::Simple {
                col: 0,
                op: SimpleOp::Eq,
                lit,
                pred,
            }),
            order: alloc::vec![(0, false)],
            start: None,
            limit: None,
            related: Vec::new(),
            select: None,
        })
    }
}

fn no_write_plane() -> Error {
    Error::new(
        ErrorCode::WrongState,
        "writes not enabled (call enableWrites after the snapshot)",
    )
}
