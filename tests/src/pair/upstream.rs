//! The daemon's side of the upstream link: hellos, snapshots, live batches, drops.

use super::*;

impl Pair {
    pub(super) fn hello_frames(&self) -> Vec<String> {
        let d = &self.daemon;
        let fp = normalized_fp(d.tables.iter());
        let tables: Vec<Value> = d
            .tables
            .iter()
            .map(|t| {
                let mut text = String::new();
                t.write_json(&mut text);
                serde_json::from_str(&text).unwrap()
            })
            .collect();
        let hello = json!({"t":"nhello","queryId":1,"bootId": d.boot, "hello": {
            "epoch": d.epoch, "comparatorVersion": 2, "tables": tables, "normalizedFp": fp}});
        let ops: Vec<Value> = d
            .rows
            .iter()
            .map(|((t, _), row)| json!({"table": t, "op": "add", "row": row}))
            .collect();
        let snapshot = json!({"t":"nbatch","queryId":1,"batch":{
            "epoch": d.epoch, "seq": 0, "normalizedFp": fp, "ops": ops, "cv": d.cv}});
        let progress = json!({"t":"progress","frame":{"cvMin": d.cv}});
        vec![
            hello.to_string(),
            snapshot.to_string(),
            progress.to_string(),
        ]
    }

    pub(super) fn answer_subscribe(&mut self) {
        self.daemon.epoch += 1;
        self.daemon.seq = 0;
        let Some(link) = self.daemon.link else {
            return;
        };
        for f in self.hello_frames() {
            self.pending.push_back(Pending::UpFrame(link, f));
        }
    }

    /// Answers a held subscribe.
    pub fn release_daemon(&mut self) {
        self.daemon.hold = false;
        if std::mem::take(&mut self.daemon.held) {
            self.answer_subscribe();
        }
        self.settle();
    }

    /// A live upstream batch of `ops` (seq + 1, cv + 1), then a `progress`.
    pub fn upstream(&mut self, ops: &[Value]) {
        self.stream(ops);
        self.settle();
    }

    /// Queues a live upstream batch of `ops` (seq + 1, cv + 1) and a `progress` on the
    /// open link, the daemon's rows following them.
    pub(super) fn stream(&mut self, ops: &[Value]) {
        let d = &mut self.daemon;
        d.seq += 1;
        d.cv += 1;
        for op in ops {
            let table = op["table"].as_str().unwrap().to_string();
            let row_key = |r: &Value| pk_of(&d.tables, &table, r);
            match op["op"].as_str().unwrap() {
                "add" => {
                    let k = row_key(&op["row"]);
                    d.rows.insert((table.clone(), k), op["row"].clone());
                }
                "remove" => {
                    let k = row_key(&op["row"]);
                    d.rows.remove(&(table.clone(), k));
                }
                _ => {
                    let k = row_key(&op["old"]);
                    d.rows.remove(&(table.clone(), k));
                    let k = row_key(&op["new"]);
                    d.rows.insert((table.clone(), k), op["new"].clone());
                }
            }
        }
        let fp = normalized_fp(d.tables.iter());
        let batch = json!({"t":"nbatch","queryId":1,"batch":{
            "epoch": d.epoch, "seq": d.seq, "normalizedFp": fp, "ops": ops, "cv": d.cv}});
        let progress = json!({"t":"progress","frame":{"cvMin": d.cv}});
        if let Some(link) = d.link.filter(|_| !d.dark) {
            self.pending
                .push_back(Pending::UpFrame(link, batch.to_string()));
            self.pending
                .push_back(Pending::UpFrame(link, progress.to_string()));
        }
    }

    /// The lagging daemon catches up: what the authority committed meanwhile reaches its
    /// rows and streams to the room, as one batch.
    pub fn catch_up_daemon(&mut self) {
        self.daemon.lagging = false;
        let ops = std::mem::take(&mut self.daemon.behind);
        if !ops.is_empty() {
            self.stream(&ops);
        }
        self.settle();
    }

    /// The driver reports upstream link `link` closed (whether or not it is current).
    pub fn input_up_closed(&mut self, link: u64) {
        self.pending.push_back(Pending::UpClosed(link, None));
        self.settle();
    }

    /// Drops the upstream link (as a daemon restart would).
    pub fn drop_upstream(&mut self) {
        if let Some(link) = self.daemon.link.take() {
            self.pending.push_back(Pending::UpClosed(link, None));
        }
        self.settle();
    }

    /// Sends a raw upstream frame on the open link.
    pub fn upstream_raw(&mut self, text: &str) {
        if let Some(link) = self.daemon.link {
            self.pending
                .push_back(Pending::UpFrame(link, text.to_string()));
        }
        self.settle();
    }
}
