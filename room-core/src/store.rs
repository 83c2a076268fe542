//! The base store: one document's rows, per table, keyed by primary key.
//!
//! Each row gets a [`RowId`] for as long as its key exists: queries index rows by id
//! instead of re-hashing key cells. An id freed by a remove is quarantined until the next
//! drain, so within one drain an id always names one key (netting relies on it).
//!
//! Access paths: point lookup by key (hashed), a scan in key order (comparator order,
//! through the order-preserving [`keys`](crate::keys) encoding; sorted when asked for, as
//! only diagnostics need it), secondary hash indexes on column sets, created on demand
//! by queries (EXISTS correlation, equality guards) and dropped when their last user
//! goes, and [orderings](ordering): the rows in a query's sort order, for windowed reads.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;

use hashbrown::hash_map::EntryRef;
use hashbrown::HashMap;

use crate::keys::{cells_key_into, join_key_into, Key};
use crate::schema::TableSchema;
use crate::value::{Cells, Value};

mod id_set;
mod numeric_index;
mod ordering;
mod pk_index;
mod ranges;
use id_set::IdSet;
#[cfg(test)]
use ordering::MAX_IDLE_ORDERINGS;
pub(crate) use ordering::{Members, Ordering, Orderings};
use pk_index::PkIndex;
use ranges::BlockRanges;

pub use crate::value::Row;

/// A row's handle within its table.
pub(crate) type RowId = u32;

/// The index id of a table's primary-key index, used as a secondary index on the key
/// columns (no secondary index has it: ids are positions in a short list).
pub(crate) const PK_INDEX: usize = u32::MAX as usize;

/// How many rows an index build reads before it sizes its map by what it found.
const INDEX_SAMPLE: usize = 1024;

/// A secondary index: rows by the (non-NULL) cells of a column set.
#[derive(Debug)]
struct SecondaryIndex {
    cols: Box<[usize]>,
    users: u32,
    map: HashMap<Key, IdSet>,
}

/// One table's rows.
#[derive(Debug)]
pub(crate) struct Table {
    pub schema: TableSchema,
    by_key: PkIndex,
    rows: Vec<Option<Row>>,
    free: Vec<RowId>,
    quarantine: Vec<RowId>,
    indexes: Vec<Option<SecondaryIndex>>,
    orderings: Orderings,
    /// Where each block of slots may sort (lets an ordering build skip blocks).
    ranges: BlockRanges,
}

/// Why a write could not be applied to the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreRefusal {
    /// An add for a key that exists.
    KeyExists,
    /// The row has the wrong number of cells.
    WrongWidth,
}

impl SecondaryIndex {
    /// Heap bytes (see [`crate::retained`]).
    fn retained(&self) -> usize {
        use crate::retained as r;
        r::slice(&self.cols)
            + self.map.allocation_size()
            + self
                .map
                .iter()
                .map(|(k, ids)| r::key(k) + ids.allocation_size())
                .sum::<usize>()
    }
}

impl Table {
    /// Heap bytes: the schema, the row images (each counted once, here), the row slots
    /// and every index and ordering (see [`crate::retained`]).
    pub(crate) fn retained(&self) -> usize {
        use crate::retained as r;
        let schema = r::arc_str(&self.schema.name)
            + r::slice(&self.schema.columns)
            + self.schema.columns.iter().map(r::arc_str).sum::<usize>()
            + r::slice(&self.schema.primary_key);
        let rows = r::vec(&self.rows) + self.rows.iter().flatten().map(r::row).sum::<usize>();
        let indexes = r::vec(&self.indexes)
            + self
                .indexes
                .iter()
                .flatten()
                .map(SecondaryIndex::retained)
                .sum::<usize>();
        schema
            + rows
            + r::vec(&self.free)
            + r::vec(&self.quarantine)
            + self.by_key.retained()
            + indexes
            + self.orderings.retained()
            + self.ranges.retained()
    }

    fn new(schema: TableSchema) -> Table {
        Table {
            ranges: BlockRanges::default(),
            schema,
            by_key: PkIndex::default(),
            rows: Vec::new(),
            free: Vec::new(),
            quarantine: Vec::new(),
            indexes: Vec::new(),
            orderings: Orderings::default(),
        }
    }

    /// The row for an id, if live.
    #[inline]
    pub fn row(&self, id: RowId) -> Option<&Row> {
        self.rows.get(id as usize).and_then(Option::as_ref)
    }

    /// Encodes the primary key of a full-width row.
    pub fn key_of<R: Cells + ?Sized>(&self, row: &R, out: &mut Vec<u8>) {
        cells_key_into(out, row, &self.schema.primary_key);
    }

    /// Looks up a row id by an encoded primary key.
    pub fn id_by_key(&self, key: &[u8]) -> Option<RowId> {
        self.by_key.get(&self.rows, &self.schema.primary_key, key)
    }

    /// The ids of the live rows, in no particular order.
    pub fn ids(&self) -> impl Iterator<Item = RowId> + '_ {
        self.by_key.ids()
    }

    /// Rows in primary-key order (sorted on each call: diagnostics and tests).
    pub fn iter(&self) -> impl Iterator<Item = (RowId, &Row)> + '_ {
        let mut by_key: Vec<(Vec<u8>, RowId)> = self
            .by_key
            .ids()
            .filter_map(|id| {
                let mut key = Vec::new();
                self.key_of(self.row(id)?, &mut key);
                Some((key, id))
            })
            .collect();
        by_key.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        by_key
            .into_iter()
            .filter_map(move |(_, id)| self.row(id).map(|r| (id, r)))
    }

    #[inline]
    fn index_insert(&mut self, id: RowId, row: &Row, scratch: &mut Vec<u8>) {
        if self.indexes.is_empty() {
            return;
        }
        for ix in self.indexes.iter_mut().flatten() {
            if join_key_into(scratch, row, &ix.cols) {
                match ix.map.get_mut(scratch.as_slice()) {
                    Some(set) => set.insert(id),
                    None => {
                        ix.map.insert(Key::from(scratch.as_slice()), IdSet::new(id));
                    }
                }
            }
        }
    }

    fn index_remove(&mut self, id: RowId, row: &Row, scratch: &mut Vec<u8>) {
        for ix in self.indexes.iter_mut().flatten() {
            if join_key_into(scratch, row, &ix.cols) {
                if let Some(set) = ix.map.get_mut(scratch.as_slice()) {
                    if set.remove(id) {
                        ix.map.remove(scratch.as_slice());
                    }
                }
            }
        }
    }

    /// Inserts a new row; refuses an existing key or a wrong width.
    pub fn insert(&mut self, row: Row, scratch: &mut Vec<u8>) -> Result<RowId, StoreRefusal> {
        if row.len() != self.schema.columns.len() {
            return Err(StoreRefusal::WrongWidth);
        }
        self.key_of(&row, scratch);
        let next = match self.free.last() {
            Some(&id) => id,
            None => self.rows.len() as RowId,
        };
        // One search: the entry either takes the new id or reports the existing key.
        if !self
            .by_key
            .insert(&self.rows, &self.schema.primary_key, scratch, next)
        {
            return Err(StoreRefusal::KeyExists);
        }
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.rows.push(None);
                (self.rows.len() - 1) as RowId
            }
        };
        self.index_insert(id, &row, scratch);
        self.orderings.on_insert(id, &row, scratch);
        self.ranges.note(id, &row);
        self.rows[id as usize] = Some(row);
        Ok(id)
    }

    /// Replaces the image of a live row whose key does not change; returns the old image.
    pub fn replace(&mut self, id: RowId, row: Row, scratch: &mut Vec<u8>) -> Option<Row> {
        let old = self.rows.get_mut(id as usize)?.take()?;
        if !self.indexes.is_empty() {
            self.index_remove(id, &old, scratch);
            self.index_insert(id, &row, scratch);
        }
        self.orderings.on_replace(id, &old, &row, scratch);
        self.ranges.note(id, &row);
        self.rows[id as usize] = Some(row);
        Some(old)
    }

    /// Removes a live row; its id is quarantined until [`Store::end_drain`].
    pub fn remove(&mut self, id: RowId, scratch: &mut Vec<u8>) -> Option<Row> {
        let old = self.rows.get_mut(id as usize)?.take()?;
        self.key_of(&old, scratch);
        self.by_key.remove(scratch, id);
        self.index_remove(id, &old, scratch);
        self.orderings.on_remove(&old, scratch);
        self.quarantine.push(id);
        Some(old)
    }

    /// Makes room for `additional` more rows (their slots and primary-key entries).
    pub fn reserve(&mut self, additional: usize) {
        let additional = additional.saturating_sub(self.free.len());
        self.rows.reserve(additional);
        self.by_key
            .reserve(&self.rows, &self.schema.primary_key, additional);
    }

    /// Registers a user of the index on `cols`, building it if needed. Columns that
    /// are the primary key (in its order) are served by the primary-key index itself:
    /// [`PK_INDEX`], which nothing builds or frees.
    pub fn ensure_index(&mut self, cols: &[usize], scratch: &mut Vec<u8>) -> usize {
        if *cols == *self.schema.primary_key {
            return PK_INDEX;
        }
        if let Some(i) = self
            .indexes
            .iter()
            .position(|ix| ix.as_ref().is_some_and(|ix| &*ix.cols == cols))
        {
            if let Some(ix) = self.indexes[i].as_mut() {
                ix.users += 1;
            }
            return i;
        }
        let mut ix = SecondaryIndex {
            cols: cols.into(),
            users: 1,
            map: HashMap::new(),
        };
        let built = match cols {
            [col] => numeric_index::build(&self.rows, *col),
            _ => None,
        };
        match built {
            Some(map) => ix.map = map,
            None => self.index_rows(&mut ix, scratch),
        }
        match self.indexes.iter().position(Option::is_none) {
            Some(i) => {
                self.indexes[i] = Some(ix);
                i
            }
            None => {
                self.indexes.push(Some(ix));
                self.indexes.len() - 1
            }
        }
    }

    /// Fills a new index row by row.
    fn index_rows(&self, ix: &mut SecondaryIndex, scratch: &mut Vec<u8>) {
        let cols = &*ix.cols;
        // Slots, live or free: an estimate is all this needs.
        let live = self.rows.len();
        let mut seen = 0;
        for (id, row) in self.rows.iter().enumerate() {
            let Some(row) = row else { continue };
            seen += 1;
            if seen == INDEX_SAMPLE && live > 2 * INDEX_SAMPLE {
                // The keys of the first rows predict how many the table has: the map
                // is sized once instead of doubling its way there.
                let estimate = ix.map.len() * (live / INDEX_SAMPLE);
                ix.map.reserve(estimate.saturating_sub(ix.map.len()));
            }
            if join_key_into(scratch, row, cols) {
                // One hash and probe: the entry is found or made where it was looked for.
                match ix.map.entry_ref(scratch.as_slice()) {
                    EntryRef::Occupied(mut e) => e.get_mut().push_new(id as RowId),
                    EntryRef::Vacant(e) => {
                        let key = Key::from(e.key());
                        e.insert_with_key(key, IdSet::new(id as RowId));
                    }
                }
            }
        }
    }

    /// Drops one user of an index; the last user frees it.
    pub fn release_index(&mut self, index: usize) {
        if let Some(slot) = self.indexes.get_mut(index) {
            if let Some(ix) = slot.as_mut() {
                ix.users -= 1;
                if ix.users == 0 {
                    *slot = None;
                }
            }
        }
    }

    /// The rows whose indexed cells encode to `key`.
    pub fn index_lookup(&self, index: usize, key: &[u8]) -> impl Iterator<Item = RowId> + '_ {
        let by_key = (index == PK_INDEX)
            .then(|| self.by_key.get(&self.rows, &self.schema.primary_key, key))
            .flatten();
        by_key.into_iter().chain(
            self.indexes
                .get(index)
                .and_then(Option::as_ref)
                .and_then(|ix| ix.map.get(key))
                .into_iter()
                .flat_map(|set| set.iter()),
        )
    }

    /// How many rows the index holds under `key`.
    pub fn index_len(&self, index: usize, key: &[u8]) -> usize {
        if index == PK_INDEX {
            return self.index_lookup(index, key).count();
        }
        self.indexes
            .get(index)
            .and_then(Option::as_ref)
            .and_then(|ix| ix.map.get(key))
            .map_or(0, |set| set.len())
    }

    /// Registers a user of the ordering of the rows with `guard`'s value (or of every
    /// row) under `order`, building it if needed (holding at least its first `want`
    /// rows). A guarded ordering holds a use of the secondary index on its guard column
    /// while it is built, so that the orderings of other values find their rows without
    /// a scan.
    pub fn ensure_ordering(
        &mut self,
        guard: Option<(usize, &Value)>,
        order: &[(usize, bool)],
        want: usize,
        scratch: &mut Vec<u8>,
    ) -> usize {
        if let Some(i) = self.orderings.acquire(guard, order) {
            return i;
        }
        // A boolean guard's rows are found by a pass over the table: an index on a
        // column of two values costs more to build than the pass.
        let index = guard
            .filter(|(_, v)| !matches!(v, Value::Bool(_)))
            .map(|(col, _)| self.ensure_index(&[col], scratch));
        let ids = self.indexed_members(guard, index, scratch);
        if let Some(&(col, _)) = order.first() {
            let members = ids.as_ref().map_or(self.rows.len(), Vec::len);
            let keep = self.orderings.build_keep(want);
            if self.ranges.worth_keeping(col, &self.rows, members, keep) {
                self.ranges.keep(col, &self.rows);
            }
        }
        let members = Members {
            slab: &self.rows,
            ids,
            guard: guard.map(|(c, v)| (c, v.cell())),
            ranges: Some(&self.ranges),
        };
        self.orderings.add(
            guard.map(|(c, v)| (c, v.clone())),
            order,
            index,
            (&members, want),
            scratch,
        )
    }

    /// The ids of the rows with `guard`'s value, in id order, through the guard `index`
    /// when there is one (and the value is not NULL: the index leaves NULL cells out);
    /// `None` when a pass over the slab finds them instead.
    fn indexed_members(
        &self,
        guard: Option<(usize, &Value)>,
        index: Option<usize>,
        scratch: &mut Vec<u8>,
    ) -> Option<Vec<RowId>> {
        match (guard, index) {
            (Some((_, v)), Some(ix)) if !v.is_null() => {
                join_key_into(scratch, core::slice::from_ref(v), &[0]);
                let mut ids: Vec<RowId> = self.index_lookup(ix, scratch).collect();
                ids.sort_unstable();
                Some(ids)
            }
            _ => None,
        }
    }

    /// Whether the block spans of column `col` are kept (diagnostics).
    #[cfg(test)]
    pub fn keeps_spans(&self, col: usize) -> bool {
        self.ranges.keeps(col)
    }

    /// Widens ordering `index`, which holds only the front of its rows (a reader got
    /// past its bound): it then holds four times as many, or all.
    pub fn widen_ordering(&self, index: usize, scratch: &mut Vec<u8>) {
        let Some(o) = self.orderings.get(index) else {
            return;
        };
        let guard = o.guard.as_ref().map(|(c, v)| (*c, v));
        let members = Members {
            slab: &self.rows,
            ids: self.indexed_members(guard, o.index, scratch),
            guard: guard.map(|(c, v)| (c, v.cell())),
            ranges: Some(&self.ranges),
        };
        o.widen(&members, scratch);
    }

    /// Drops one user of an ordering (see [`Orderings::release`]).
    pub fn release_ordering(&mut self, index: usize) {
        for ix in self.orderings.release(index) {
            self.release_index(ix);
        }
    }

    /// A live ordering.
    pub fn ordering(&self, index: usize) -> Option<&Ordering> {
        self.orderings.get(index)
    }

    /// How many orderings are built (diagnostics).
    #[cfg(test)]
    pub fn ordering_count(&self) -> usize {
        self.orderings.count()
    }

    /// How many secondary indexes are live (diagnostics).
    #[cfg(test)]
    pub fn index_count(&self) -> usize {
        self.indexes.iter().flatten().count()
    }
}

/// Every table of the room.
#[derive(Debug)]
pub(crate) struct Store {
    tables: Vec<Table>,
    /// Tables at or past this index are the room's own system tables (the ledger): not
    /// visible to client ASTs.
    user_tables: usize,
    by_name: HashMap<Arc<str>, usize>,
    /// A reusable key buffer for lookups.
    pub scratch: Vec<u8>,
}

impl Store {
    /// Heap bytes of every table (see [`crate::retained`]).
    pub(crate) fn retained(&self) -> usize {
        crate::retained::vec(&self.tables)
            + self.tables.iter().map(Table::retained).sum::<usize>()
            + self.by_name.allocation_size()
            + crate::retained::vec(&self.scratch)
    }

    /// A store with the given tables, all empty.
    pub fn new(schemas: Vec<TableSchema>) -> Store {
        let mut store = Store {
            tables: Vec::new(),
            user_tables: schemas.len(),
            by_name: HashMap::new(),
            scratch: Vec::new(),
        };
        for s in schemas {
            store.add_table(s);
        }
        store
    }

    /// Adds a table (the write plane's system tables arrive after open).
    pub fn add_table(&mut self, schema: TableSchema) -> usize {
        let idx = self.tables.len();
        self.by_name.insert(schema.name.clone(), idx);
        self.tables.push(Table::new(schema));
        idx
    }

    /// A table by index.
    #[inline]
    pub fn table(&self, t: usize) -> &Table {
        &self.tables[t]
    }

    /// A table by index, mutably, with the store's scratch buffer.
    #[inline]
    pub fn table_mut(&mut self, t: usize) -> (&mut Table, &mut Vec<u8>) {
        (&mut self.tables[t], &mut self.scratch)
    }

    /// The index of a table by name.
    pub fn table_id(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// [`Store::table_id`] for a name that is usually the table's own `Arc<str>` (ops
    /// parsed or built by the room share it): a pointer match, then the hashed lookup.
    pub fn table_id_shared(&self, name: &Arc<str>) -> Option<usize> {
        let few = self.tables.len() <= 16;
        few.then(|| {
            self.tables
                .iter()
                .position(|t| Arc::ptr_eq(&t.schema.name, name))
        })
        .flatten()
        .or_else(|| self.table_id(name))
    }

    /// The row for `(table, id)`.
    #[inline]
    pub fn row(&self, t: usize, id: RowId) -> Option<&Row> {
        self.tables[t].row(id)
    }

    /// Looks up a row by the primary key of a full-width row image.
    pub fn find<R: Cells + ?Sized>(&mut self, t: usize, row: &R) -> Option<RowId> {
        let table = &self.tables[t];
        table.key_of(row, &mut self.scratch);
        table
            .by_key
            .get_like(&table.rows, &table.schema.primary_key, &self.scratch, row)
    }

    /// Looks up a row by its primary-key cells (in primary-key order).
    #[cfg(test)]
    pub fn find_by_pk(&mut self, t: usize, pk: &[Value]) -> Option<RowId> {
        self.scratch.clear();
        for v in pk {
            crate::keys::push_cell(&mut self.scratch, v.cell(), false);
        }
        self.tables[t].id_by_key(&self.scratch)
    }

    /// Testing knob: orderings built from now on keep their first `rows` rows (by
    /// default 128, or what the first reader asks for and a quarter more) before readers widen them.
    pub fn set_ordering_first_rows(&mut self, rows: usize) {
        for t in &mut self.tables {
            t.orderings.first_rows = Some(rows.max(1));
        }
    }

    /// Testing knob: block ranges cover blocks of `1 << shift` row slots (by default
    /// 512, the most); the ranges are rebuilt from the rows held, and each table keeps
    /// the columns its load would have kept with blocks that small (a test's snapshot
    /// is a few rows: see [`Store::snapshot_loaded`]).
    pub fn set_block_shift(&mut self, shift: u32) {
        for t in &mut self.tables {
            t.ranges.set_shift(shift, &t.rows);
            let live = t
                .rows
                .len()
                .saturating_sub(t.free.len() + t.quarantine.len());
            t.ranges.keep_loaded(t.schema.columns.len(), &t.rows, live);
        }
    }

    /// Empties the first `tables` tables: their rows, ids and the contents of their
    /// indexes and orderings (which stay registered).
    pub fn clear_tables(&mut self, tables: usize) {
        for t in self.tables.iter_mut().take(tables) {
            t.by_key = PkIndex::default();
            t.rows = Vec::new();
            t.free.clear();
            t.quarantine.clear();
            for ix in t.indexes.iter_mut().flatten() {
                ix.map.clear();
            }
            t.orderings.clear();
            t.ranges.clear();
        }
    }

    /// A seq-0 snapshot has loaded the first `tables` tables: each keeps the block
    /// spans of the columns a first query may skip blocks on
    /// ([`BlockRanges::keep_loaded`]).
    pub fn snapshot_loaded(&mut self, tables: usize) {
        for t in self.tables.iter_mut().take(tables) {
            let live = t
                .rows
                .len()
                .saturating_sub(t.free.len() + t.quarantine.len());
            t.ranges.keep_loaded(t.schema.columns.len(), &t.rows, live);
        }
    }

    /// Ends a drain: quarantined ids become reusable.
    pub fn end_drain(&mut self) {
        for t in &mut self.tables {
            t.free.append(&mut t.quarantine);
            // The list is reused from drain to drain; a burst of removals leaves no large
            // one behind.
            if t.quarantine.capacity() > 1024 {
                t.quarantine = Vec::new();
            }
        }
    }

    /// The schemas, in table order.
    pub fn schemas(&self) -> impl Iterator<Item = &TableSchema> {
        self.tables.iter().map(|t| &t.schema)
    }
}

/// The tables client ASTs may read: the upstream hello's, not the system tables.
#[derive(Debug)]
pub(crate) struct UserCatalog<'a>(pub &'a Store);

impl crate::ast::Catalog for UserCatalog<'_> {
    fn table(&self, name: &str) -> Option<(usize, &TableSchema)> {
        let t = self.0.table_id(name).filter(|&t| t < self.0.user_tables)?;
        Some((t, &self.0.tables[t].schema))
    }

    fn schema(&self, index: usize) -> Option<&TableSchema> {
        self.0.tables.get(index).map(|t| &t.schema)
    }
}

impl crate::ast::Catalog for Store {
    fn table(&self, name: &str) -> Option<(usize, &TableSchema)> {
        let t = self.table_id(name)?;
        Some((t, &self.tables[t].schema))
    }

    fn schema(&self, index: usize) -> Option<&TableSchema> {
        self.tables.get(index).map(|t| &t.schema)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::CellRef;
    use alloc::vec;

    fn row(cells: &[Value]) -> Row {
        Row::from(cells)
    }

    #[test]
    fn insert_lookup_remove_and_quarantine() {
        let mut store = Store::new(vec![TableSchema::new("t", &["id", "v"], &[0])]);
        let (t, scratch) = store.table_mut(0);
        let a = t
            .insert(row(&[Value::num(2.0), Value::str("b")]), scratch)
            .unwrap();
        let b = t
            .insert(row(&[Value::num(1.0), Value::str("a")]), scratch)
            .unwrap();
        assert_eq!(
            t.insert(row(&[Value::num(1.0), Value::Null]), scratch),
            Err(StoreRefusal::KeyExists)
        );
        assert_eq!(
            t.insert(row(&[Value::num(3.0)]), scratch),
            Err(StoreRefusal::WrongWidth)
        );
        let order: Vec<RowId> = t.iter().map(|(id, _)| id).collect();
        assert_eq!(order, vec![b, a]);
        t.remove(a, scratch).unwrap();
        // The freed id is not reused before the drain ends.
        let c = t
            .insert(row(&[Value::num(5.0), Value::Null]), scratch)
            .unwrap();
        assert_ne!(c, a);
        store.end_drain();
        let (t, scratch) = store.table_mut(0);
        let d = t
            .insert(row(&[Value::num(6.0), Value::Null]), scratch)
            .unwrap();
        assert_eq!(d, a);
        assert_eq!(store.find_by_pk(0, &[Value::num(6.0)]), Some(d));
    }

    #[test]
    fn secondary_index_follows_writes() {
        let mut store = Store::new(vec![TableSchema::new("t", &["id", "g"], &[0])]);
        let (t, scratch) = store.table_mut(0);
        let a = t
            .insert(row(&[Value::num(1.0), Value::num(7.0)]), scratch)
            .unwrap();
        let ix = t.ensure_index(&[1], scratch);
        let b = t
            .insert(row(&[Value::num(2.0), Value::num(7.0)]), scratch)
            .unwrap();
        let _n = t
            .insert(row(&[Value::num(3.0), Value::Null]), scratch)
            .unwrap();
        let mut key = Vec::new();
        join_key_into(&mut key, &[Value::Null, Value::num(7.0)], &[1]);
        let mut got: Vec<RowId> = t.index_lookup(ix, &key).collect();
        got.sort();
        assert_eq!(got, vec![a, b]);
        t.replace(b, row(&[Value::num(2.0), Value::num(8.0)]), scratch);
        assert_eq!(t.index_lookup(ix, &key).collect::<Vec<_>>(), vec![a]);
        assert_eq!(t.ensure_index(&[1], scratch), ix);
        t.release_index(ix);
        assert_eq!(t.index_count(), 1);
        t.release_index(ix);
        assert_eq!(t.index_count(), 0);
    }

    #[test]
    fn orderings_follow_writes_and_idle_ones_are_capped() {
        let mut store = Store::new(vec![TableSchema::new("t", &["id", "g", "s"], &[0])]);
        let (t, scratch) = store.table_mut(0);
        let cells = |id: f64, g: f64, s: f64| row(&[Value::num(id), Value::num(g), Value::num(s)]);
        let a = t.insert(cells(1.0, 0.0, 5.0), scratch).unwrap();
        let order = [(2, true), (0, false)];
        let zero = Value::num(0.0);
        let o = t.ensure_ordering(Some((1, &zero)), &order, 0, scratch);
        let all = t.ensure_ordering(None, &order, 0, scratch);
        let b = t.insert(cells(2.0, 0.0, 7.0), scratch).unwrap();
        let c = t.insert(cells(3.0, 1.0, 9.0), scratch).unwrap();
        let ids = |t: &Table, o: usize| -> Vec<RowId> {
            t.ordering(o).unwrap().held().map.rows().collect()
        };
        // s descending; the guarded ordering holds only g = 0.
        assert_eq!(ids(t, o), vec![b, a]);
        assert_eq!(ids(t, all), vec![c, b, a]);
        t.replace(a, cells(1.0, 0.0, 8.0), scratch);
        assert_eq!(ids(t, o), vec![a, b]);
        // A row moving to another guard value leaves the ordering.
        t.replace(b, cells(2.0, 1.0, 7.0), scratch);
        assert_eq!(ids(t, o), vec![a]);
        t.replace(c, cells(3.0, 0.0, 9.0), scratch);
        assert_eq!(ids(t, o), vec![c, a]);
        t.remove(a, scratch);
        assert_eq!(ids(t, o), vec![c]);
        assert_eq!(ids(t, all), vec![c, b]);
        // The same ordering is shared; an idle one stays built.
        assert_eq!(t.ensure_ordering(Some((1, &zero)), &order, 0, scratch), o);
        t.release_ordering(o);
        t.release_ordering(o);
        t.release_ordering(all);
        assert_eq!(t.ordering_count(), 2);
        // Past MAX_IDLE_ORDERINGS idle orderings, the one idle longest goes.
        for g in 0..MAX_IDLE_ORDERINGS {
            let v = Value::num(10.0 + g as f64);
            let i = t.ensure_ordering(Some((1, &v)), &order, 0, scratch);
            t.release_ordering(i);
        }
        assert_eq!(t.ordering_count(), MAX_IDLE_ORDERINGS);
        // (Its slot may hold a newer ordering now.)
        assert!(
            t.ordering(o)
                .is_none_or(|x| x.guard != Some((1, zero.clone()))),
            "the ordering idle longest was dropped"
        );
    }

    #[test]
    fn a_partial_ordering_keeps_its_front_and_widens_to_all() {
        let mut store = Store::new(vec![TableSchema::new("t", &["id", "s"], &[0])]);
        store.set_ordering_first_rows(2);
        let (t, scratch) = store.table_mut(0);
        for id in 0..20 {
            let r = row(&[Value::num(id as f64), Value::num((id * 7 % 20) as f64)]);
            t.insert(r, scratch).unwrap();
        }
        let o = t.ensure_ordering(None, &[(1, false), (0, false)], 0, scratch);
        let s_of = |t: &Table| -> Vec<f64> {
            let o = t.ordering(o).unwrap();
            let held = o.held();
            held.map
                .rows()
                .map(|id| match t.row(id).unwrap().get(1) {
                    CellRef::Num(n) => n,
                    other => panic!("{other:?}"),
                })
                .collect()
        };
        assert_eq!(s_of(t), vec![0.0, 1.0]);
        // A row past the bound is not kept; one before it is.
        t.insert(row(&[Value::num(30.0), Value::num(50.0)]), scratch)
            .unwrap();
        t.insert(row(&[Value::num(31.0), Value::num(0.5)]), scratch)
            .unwrap();
        assert_eq!(s_of(t), vec![0.0, 0.5, 1.0]);
        // Widening keeps four times as many, then (past half the rows) all of them.
        t.widen_ordering(o, scratch);
        assert_eq!(s_of(t).len(), 8);
        assert!(t.ordering(o).unwrap().held().bound.is_some());
        t.widen_ordering(o, scratch);
        assert_eq!(s_of(t).len(), 22);
        assert!(t.ordering(o).unwrap().held().bound.is_none());
        t.insert(row(&[Value::num(32.0), Value::num(60.0)]), scratch)
            .unwrap();
        assert_eq!(s_of(t).last(), Some(&60.0));
    }
}
