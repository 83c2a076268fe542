//! The journal's and the authority's answers to the host's operations.

use super::*;

impl Pair {
    pub(super) fn journal_op(&mut self, o: Output) {
        let fail = self.journal.failing;
        let err = || Err("No space left on device (os error 28)".to_string());
        match o {
            Output::JournalRead { io } => {
                // Entries and the bindings compaction kept: the host derives the rest.
                let j = &self.journal;
                let contents = JournalContents {
                    entries: j.entries.clone(),
                    bindings: j.bindings.clone(),
                    flushes: j.flushes.values().cloned().collect(),
                    max_flush_seq: j.max_seq,
                };
                self.pending
                    .push_back(Pending::JournalRead(io, Ok(contents)));
            }
            Output::JournalAppend { io, entries } => {
                let r = if fail {
                    err()
                } else {
                    for e in &entries {
                        self.durable.push((e.client_id.clone(), e.mid));
                    }
                    self.journal.entries.extend(entries);
                    Ok(())
                };
                self.pending.push_back(Pending::JournalWritten(io, r));
            }
            Output::JournalAppendFlush { io, record } => {
                let r = if fail {
                    err()
                } else {
                    self.journal.max_seq = self.journal.max_seq.max(record.seq);
                    self.journal.flushes.insert(record.seq, record);
                    Ok(())
                };
                self.pending.push_back(Pending::JournalWritten(io, r));
            }
            Output::JournalConfirmFlush { io, seq } => {
                let r = if fail {
                    err()
                } else {
                    self.journal.flushes.remove(&seq);
                    Ok(())
                };
                self.pending.push_back(Pending::JournalWritten(io, r));
            }
            Output::JournalCompact { io, durable } => {
                let r = if fail {
                    err()
                } else {
                    let j = &mut self.journal;
                    let mut seen: BTreeSet<String> =
                        j.bindings.iter().map(|(c, _)| c.clone()).collect();
                    for e in &j.entries {
                        if !e.sub.is_empty() && seen.insert(e.client_id.clone()) {
                            j.bindings.push((e.client_id.clone(), e.sub.clone()));
                        }
                    }
                    j.entries
                        .retain(|e| durable.get(&e.client_id).is_none_or(|&d| e.mid > d));
                    Ok(())
                };
                self.pending.push_back(Pending::JournalWritten(io, r));
            }
            _ => unreachable!("journal_op takes journal outputs"),
        }
    }

    /// Answers every held journal operation (in order).
    pub fn release_journal(&mut self) {
        self.journal.hold = false;
        for o in std::mem::take(&mut self.journal.held) {
            self.journal_op(o);
        }
        self.settle();
    }

    pub(super) fn authority_apply(&mut self, body: &str) -> ApplyResult {
        let v: Value = serde_json::from_str(body).expect("flush bodies are JSON");
        let a = &mut self.authority;
        if v["epoch"].as_u64() != Some(a.epoch) {
            return ApplyResult::Fenced {
                current_epoch: Some(a.epoch),
            };
        }
        let id = (
            v["source"].as_str().unwrap_or("").to_string(),
            v["offset"].as_str().unwrap_or("").to_string(),
        );
        if a.applied.contains_key(&id) {
            return ApplyResult::Ok {
                applied: false,
                cv: None,
            };
        }
        let tables = &self.daemon.tables;
        // The room's own tables: the ledger by client, an outcome by (client, mid).
        let pk = |table: &str, row: &Value| -> String {
            match table {
                "_rindle_client_mutations" => json!([row[0]]).to_string(),
                "_rindle_room_mutation_outcomes" => json!([row[0], row[1]]).to_string(),
                _ => pk_of(tables, table, row),
            }
        };
        let changes = v["changes"].as_array().cloned().unwrap_or_default();
        let mut conflicts = Vec::new();
        for c in &changes {
            let table = c["table"].as_str().unwrap_or("");
            let image = if c["op"] == "add" {
                &c["row"]
            } else {
                &c["old"]
            };
            let key = (table.to_string(), pk(table, image));
            let current = a.rows.get(&key);
            let ok = match c["op"].as_str() {
                Some("add") => current.is_none(),
                _ => current == Some(&c["old"]),
            };
            if !ok {
                let pk_value: Value = serde_json::from_str(&key.1).unwrap();
                conflicts.push(json!({"table": table, "pk": pk_value, "current": current}));
            }
        }
        if !conflicts.is_empty() {
            return ApplyResult::Conflict {
                conflicts_json: Value::Array(conflicts).to_string(),
            };
        }
        let mut echo = Vec::new();
        for c in &changes {
            let table = c["table"].as_str().unwrap_or("");
            // What the authority commits reaches the daemon (through the database it
            // follows): a later snapshot holds it, and the daemon streams it to the
            // room (the echo of the room's own write). The ledger is the room's own.
            let data = !table.starts_with("_rindle");
            let mirrored = data && !self.daemon.lagging;
            let op = match c["op"].as_str() {
                Some("add") => json!({"table": table, "op": "add", "row": c["row"]}),
                Some("remove") => json!({"table": table, "op": "remove", "row": c["old"]}),
                _ => json!({"table": table, "op": "edit", "old": c["old"], "new": c["row"]}),
            };
            if c["op"] == "remove" {
                let key = (table.to_string(), pk(table, &c["old"]));
                a.rows.remove(&key);
                if mirrored {
                    self.daemon.rows.remove(&key);
                }
            } else {
                let key = (table.to_string(), pk(table, &c["row"]));
                a.rows.insert(key.clone(), c["row"].clone());
                if mirrored {
                    self.daemon.rows.insert(key, c["row"].clone());
                }
            }
            if mirrored {
                echo.push(op);
            } else if data {
                self.daemon.behind.push(op);
            }
        }
        a.applied
            .insert(id, v["batchHash"].as_str().unwrap_or("").to_string());
        a.cv += 1;
        let cv = a.cv as f64;
        if !echo.is_empty() && !self.daemon.silent {
            self.stream(&echo);
        }
        ApplyResult::Ok {
            applied: true,
            cv: Some(cv),
        }
    }
}
