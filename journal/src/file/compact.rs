//! Compaction: the journal rewritten without what the authority holds durably and
//! without settled flush records, into `<path>.compact`, synced, then renamed over the
//! journal (the commit point) and the directory synced.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};

use super::{parent_dir, sync_dir, FileJournal, Inner, RecordKind, FILE_HEADER};
use crate::payload::{decode, decode_binding, encode_binding, EntryKey, SeqOnly, Snapshot};
use crate::record::{frame, with_path};

impl FileJournal {
    /// Rewrites the journal keeping the entries `durable` does not cover (`mid >
    /// durable[client]`), one binding per client, the unsettled flush records, the doc
    /// record and the highest flush seq; the carried confirmations count as written and
    /// are cleared once the rewrite is the journal. Nothing to drop: nothing is written.
    pub(super) fn compact_locked(
        &self,
        inner: &mut Inner,
        durable: &BTreeMap<String, u64>,
    ) -> io::Result<()> {
        let records = self.read_locked(inner)?;
        let mut keep = vec![false; records.len()];
        let mut live_flushes: BTreeMap<u64, usize> = BTreeMap::new();
        let mut max_seq = 0;
        // clientID → subject, first seen wins: rewritten as binding records so a client's
        // binding outlives its dropped entries.
        let mut bindings: Vec<(String, String)> = Vec::new();
        let mut bound: std::collections::HashSet<String> = Default::default();
        let mut doc: Option<&[u8]> = None;
        let mut bind = |offset: u64, payload: &[u8]| -> io::Result<()> {
            let (client, sub) = decode_binding(&self.path, offset, payload)?;
            if !sub.is_empty() && bound.insert(client.clone()) {
                bindings.push((client, sub));
            }
            Ok(())
        };
        for (i, (offset, kind, payload)) in records.iter().enumerate() {
            match kind {
                RecordKind::Entry => {
                    let key: EntryKey = decode(&self.path, *offset, payload)?;
                    keep[i] = durable.get(&key.client_id).is_none_or(|&d| key.mid > d);
                    bind(*offset, payload)?;
                }
                RecordKind::Binding => bind(*offset, payload)?,
                RecordKind::Flush => {
                    let seq = decode::<SeqOnly>(&self.path, *offset, payload)?.seq;
                    max_seq = max_seq.max(seq);
                    // A re-appended seq replaces the earlier record, as in replay_flushes.
                    live_flushes.insert(seq, i);
                }
                RecordKind::Confirm => {
                    let seq = decode::<SeqOnly>(&self.path, *offset, payload)?.seq;
                    live_flushes.remove(&seq);
                }
                RecordKind::Snapshot => {
                    let snap: Snapshot = decode(&self.path, *offset, payload)?;
                    max_seq = max_seq.max(snap.max_flush_seq);
                }
                RecordKind::Doc => {
                    doc.get_or_insert(payload);
                }
            }
        }
        for &i in live_flushes.values() {
            keep[i] = true;
        }
        let droppable = records
            .iter()
            .zip(&keep)
            .filter(|((_, kind, _), &kept)| {
                !kept
                    && !matches!(
                        kind,
                        RecordKind::Snapshot | RecordKind::Binding | RecordKind::Doc
                    )
            })
            .count();
        if droppable == 0 {
            return Ok(());
        }

        let mut frames = FILE_HEADER.to_vec();
        if let Some(doc) = doc {
            frame(&self.path, &mut frames, RecordKind::Doc, doc)?;
        }
        if max_seq > 0 {
            let snap = format!("{{\"maxFlushSeq\":{max_seq}}}");
            frame(
                &self.path,
                &mut frames,
                RecordKind::Snapshot,
                snap.as_bytes(),
            )?;
        }
        for (client, sub) in &bindings {
            let payload = encode_binding(client, sub);
            frame(
                &self.path,
                &mut frames,
                RecordKind::Binding,
                payload.as_bytes(),
            )?;
        }
        for ((_, kind, payload), _) in records.iter().zip(&keep).filter(|(_, &k)| k) {
            frame(&self.path, &mut frames, *kind, payload)?;
        }

        let file = self.write_compacted(&frames).inspect_err(|_| {
            // Best effort: open() removes it anyway.
            let _ = fs::remove_file(&self.compact_path);
        })?;
        // The commit point: before the rename the original is untouched and valid; after
        // it the complete, synced compacted file is the journal.
        fs::rename(&self.compact_path, &self.path)
            .map_err(|e| with_path(&self.compact_path, "rename over the journal", e))?;
        sync_dir(&parent_dir(&self.path))?;
        inner.file = file;
        inner.len = frames.len() as u64;
        // The compacted file holds what the carried confirmations said.
        inner.carried.clear();
        Ok(())
    }

    /// Writes and syncs `<path>.compact`, returning its handle (read + append).
    fn write_compacted(&self, frames: &[u8]) -> io::Result<File> {
        let path = &self.compact_path;
        match fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(with_path(path, "remove stale compaction file", e)),
        }
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .open(path)
            .map_err(|e| with_path(path, "create", e))?;
        file.write_all(frames)
            .map_err(|e| with_path(path, "write", e))?;
        file.sync_all().map_err(|e| with_path(path, "sync", e))?;
        Ok(file)
    }
}
