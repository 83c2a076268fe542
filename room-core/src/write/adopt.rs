//! Taking in a flush the authority committed while no incarnation of this room was there
//! to apply it: a journaled flush record resubmitted at boot.
//!
//! A room learns what its own committed flushes wrote in two ways: `flushOk` makes the
//! batch's images the base of its keys at once, and upstream echoes them later. A flush
//! settled at boot had neither: it was built by an incarnation that died, and the seq-0
//! snapshot this incarnation booted from was taken before the authority committed it
//! (a resubmission answered `applied` commits *now*) or, when the daemon lags, before
//! the daemon saw that commit. The durable lmids the boot seeds next say its mutations
//! are in, so the replay skips them; without their images the head would lack them, and
//! the next write of one of their keys would flush against an image the authority no
//! longer holds — a CAS conflict that drops that write. So each change of the settled
//! batch is taken in where the key still shows the batch's `old` image, and its echo is
//! expected like any flush's.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use serde::Deserialize;

use super::Echo;
use crate::json::read::WireRow;
use crate::keys::Key;
use crate::store::Row;
use crate::value::CellRef;
use crate::{Error, Room};

/// One change of a committed flush batch: a key of `table` went from `old` to `new`
/// (`None`: absent).
#[derive(Clone, Debug, PartialEq)]
pub struct CommittedChange {
    /// The table.
    pub table: String,
    /// The image the batch replaced (its CAS base).
    pub old: Option<Row>,
    /// The image the batch wrote.
    pub new: Option<Row>,
}

#[derive(Deserialize)]
struct WireBatch {
    changes: Vec<WireChange>,
}

#[derive(Deserialize)]
struct WireChange {
    table: String,
    op: String,
    #[serde(default)]
    old: Option<WireRow>,
    #[serde(default)]
    row: Option<WireRow>,
}

/// The changes of a flush body as the room sends it (`{…, "changes": [{table, op, old?,
/// row?}, …]}`): `add` carries `row`, `remove` `old`, `edit` both.
pub fn committed_changes(body: &str) -> Result<Vec<CommittedChange>, Error> {
    let batch: WireBatch =
        serde_json::from_str(body).map_err(|e| Error::malformed(format!("a flush body: {e}")))?;
    batch
        .changes
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let (old, new) = (c.old.map(|r| r.0), c.row.map(|r| r.0));
            let fits = match c.op.as_str() {
                "add" => old.is_none() && new.is_some(),
                "remove" => old.is_some() && new.is_none(),
                "edit" => old.is_some() && new.is_some(),
                _ => false,
            };
            if !fits {
                return Err(Error::malformed(format!(
                    "a flush body: change {i} ({:?}) does not carry the images its op needs",
                    c.op
                )));
            }
            Ok(CommittedChange {
                table: c.table,
                old,
                new,
            })
        })
        .collect()
}

/// The ledger advances `(clientID, lmid)` a flush batch's changes carry: the
/// `_rindle_client_mutations` rows it writes. A boot reads them to tell whether a batch
/// that came back `fenced` had been committed before (every advance at or below the
/// durable lmid the authority reports for its client).
pub fn ledger_advances(changes: &[CommittedChange]) -> Vec<(String, u64)> {
    changes
        .iter()
        .filter(|c| c.table == super::LEDGER_TABLE)
        .filter_map(|c| {
            let row = c.new.as_ref()?;
            match (row.get(0), row.get(1)) {
                (CellRef::Str(client), CellRef::Num(lmid)) if lmid >= 0.0 => {
                    Some((String::from(client), lmid as u64))
                }
                _ => None,
            }
        })
        .collect()
}

impl Room {
    /// Takes a committed flush batch's changes into the head (which is the base of every
    /// key a boot has not written yet): each change of a writable table whose key still
    /// holds `old` gets `new`, and `new` is expected back from upstream as the room's own
    /// echo. A key already holding `new` (the snapshot saw the commit) or any third image
    /// (someone wrote the key since) is left as it is. The room's ledger and outcome
    /// tables are not touched: the durable lmids are seeded separately. Call it before
    /// any mutation runs (at boot, before the replay), then drain: the changes taken are
    /// one local commit (`headCv` + 1). Returns how many changes were taken. Their
    /// expected echoes carry one batch number, [`Room::next_flight_id`] before the call
    /// ([`Room::flights_awaiting_echo`] tells when they are all in).
    pub fn adopt_committed(&mut self, changes: &[CommittedChange]) -> Result<usize, Error> {
        self.require_live()?;
        let mut taken = 0;
        for c in changes {
            let Some(t) = self.store.table_id(&c.table) else {
                continue;
            };
            let w = self.writes_ref()?;
            if !w.writable(t) || w.tx.is_some() {
                continue;
            }
            let Some(image) = c.old.as_ref().or(c.new.as_ref()) else {
                continue;
            };
            let mut key = Vec::new();
            self.store.table(t).key_of(image, &mut key);
            let key = Key::from(key);
            if self.writes_ref()?.dirty.contains_key(&(t, key.clone())) {
                continue; // a write of this incarnation's: the replay already ran
            }
            let current =
                (self.store.table(t).id_by_key(&key)).and_then(|rid| self.store.row(t, rid));
            if current != c.old.as_ref() {
                continue;
            }
            self.write_head(t, &key, c.new.clone())?;
            let w = self.writes_mut()?;
            // One number for the whole batch, as for a flush of the room's own.
            let flight = w.flights;
            let q = w.echoes.entry((t, key)).or_default();
            if q.len() >= super::MAX_ECHOES {
                q.pop_front();
            }
            q.push_back(Echo {
                flight,
                committed: true,
                image: c.new.clone(),
            });
            taken += 1;
        }
        if taken > 0 {
            self.writes_mut()?.flights += 1;
            self.head_cv += 1; // one local commit, as a seed's ledger rows are
        }
        Ok(taken)
    }
}
