//! A file journal that does not exist yet: reads answer "empty" and the file (with its
//! directories) is created by the first write. A room that starts, or fails to start,
//! without ever acknowledging a mutation leaves no file behind.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::journal::file::FileJournal;
use crate::journal::group_sync::GroupSync;
use crate::journal::{
    FlushRecord, GroupDone, GroupedWrite, Journal, JournalContents, JournalEntry,
};
use crate::server::error::JournalOpenError;

/// A file journal created at its first write (see the module docs).
#[derive(Debug)]
pub(crate) struct DeferredFileJournal {
    path: PathBuf,
    /// A fleet room's doc: the file is created with its doc record first.
    doc: Option<String>,
    /// The box's shared sync, for the file once it exists.
    group: Option<Arc<GroupSync>>,
    file: Mutex<Option<Arc<FileJournal>>>,
}

impl DeferredFileJournal {
    /// A journal at `path`, which must not exist yet. Its nearest existing ancestor must
    /// be a directory (checked now, so a bad path fails the start-up, not the first
    /// write).
    pub(crate) fn new(path: &Path) -> Result<DeferredFileJournal, JournalOpenError> {
        let mut dir = path.parent();
        while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
            match std::fs::metadata(d) {
                Ok(m) if m.is_dir() => break,
                Ok(_) => {
                    return Err(JournalOpenError::NotADirectory {
                        path: path.to_path_buf(),
                        ancestor: d.to_path_buf(),
                    })
                }
                Err(_) => dir = d.parent(),
            }
        }
        Ok(DeferredFileJournal {
            path: path.to_path_buf(),
            doc: None,
            group: None,
            file: Mutex::new(None),
        })
    }

    /// A fleet room's journal at `path` (which must not exist yet), created with `doc`'s
    /// record first at the first write: a room nobody writes to leaves no directory.
    /// Its appends are covered by the box's `group` sync when there is one.
    pub(crate) fn for_doc(
        path: &Path,
        doc: &str,
        group: Option<Arc<GroupSync>>,
    ) -> Result<DeferredFileJournal, JournalOpenError> {
        let mut j = DeferredFileJournal::new(path)?;
        j.doc = Some(doc.to_string());
        j.group = group;
        Ok(j)
    }

    /// The file, if a write created it.
    fn existing(&self) -> Option<Arc<FileJournal>> {
        // A poisoned lock only means a panic elsewhere; the Option is still whole.
        self.file.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The file, created now if it does not exist yet.
    fn created(&self) -> io::Result<Arc<FileJournal>> {
        let mut slot = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = slot.as_ref() {
            return Ok(f.clone());
        }
        let mut f = match &self.doc {
            Some(doc) => FileJournal::open_for_doc(&self.path, doc)?,
            None => FileJournal::open(&self.path)?,
        };
        if let Some(group) = &self.group {
            // A file on another filesystem syncs its own appends.
            f.sync_through(group.clone());
        }
        let f = Arc::new(f);
        *slot = Some(f.clone());
        Ok(f)
    }
}

impl Journal for DeferredFileJournal {
    fn append(&self, entries: &[JournalEntry]) -> io::Result<()> {
        self.created()?.append(entries)
    }

    fn replay(&self) -> io::Result<Vec<JournalEntry>> {
        self.existing().map_or(Ok(Vec::new()), |f| f.replay())
    }

    fn append_flush(&self, record: &FlushRecord) -> io::Result<()> {
        self.created()?.append_flush(record)
    }

    fn confirm_flush(&self, seq: u64) -> io::Result<()> {
        // Without a file there is no flush record to confirm.
        self.existing().map_or(Ok(()), |f| f.confirm_flush(seq))
    }

    fn submit_grouped(
        self: Arc<Self>,
        write: GroupedWrite,
        done: GroupDone,
    ) -> Result<(), (GroupedWrite, GroupDone)> {
        // The first write creates the file: the caller makes it on a thread of its own.
        match self.existing() {
            Some(f) => f.submit_grouped(write, done),
            None => Err((write, done)),
        }
    }

    fn replay_flushes(&self) -> io::Result<(Vec<FlushRecord>, u64)> {
        self.existing()
            .map_or(Ok((Vec::new(), 0)), |f| f.replay_flushes())
    }

    fn bindings(&self) -> io::Result<Vec<(String, String)>> {
        self.existing().map_or(Ok(Vec::new()), |f| f.bindings())
    }

    fn read_all(&self) -> io::Result<JournalContents> {
        match self.existing() {
            Some(f) => f.read_all(),
            None => Ok(JournalContents {
                entries: Vec::new(),
                bindings: Vec::new(),
                flushes: Vec::new(),
                max_flush_seq: 0,
            }),
        }
    }

    fn compact(&self, durable: &BTreeMap<String, u64>) -> io::Result<()> {
        self.existing().map_or(Ok(()), |f| f.compact(durable))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::Outcome;

    #[test]
    fn reads_create_nothing_and_the_first_append_creates_the_file() {
        let dir = std::env::temp_dir().join(format!("rindle-deferred-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("sub").join("journal");
        let j = DeferredFileJournal::new(&path).unwrap();
        assert!(j.read_all().unwrap().entries.is_empty());
        j.compact(&BTreeMap::new()).unwrap();
        j.confirm_flush(1).unwrap();
        assert!(!dir.exists(), "nothing created before a write");
        let entry = JournalEntry {
            client_id: "c1".into(),
            mid: 1,
            name: "m".into(),
            args: "null".into(),
            sub: "u".into(),
            outcome: Outcome::Applied,
        };
        j.append(std::slice::from_ref(&entry)).unwrap();
        assert!(path.exists());
        assert_eq!(j.replay().unwrap(), vec![entry]);
        assert_eq!(FileJournal::open(&path).unwrap().replay().unwrap().len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_path_under_a_file_is_refused_at_once() {
        let file = std::env::temp_dir().join(format!("rindle-deferred-f-{}", std::process::id()));
        std::fs::write(&file, "x").unwrap();
        let err = DeferredFileJournal::new(&file.join("journal")).unwrap_err();
        assert!(
            matches!(err, JournalOpenError::NotADirectory { .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("is not a directory"), "{err}");
        let _ = std::fs::remove_file(&file);
    }
}
