//! Websocket clients: connecting, sending, reading what the host sent them.

use super::*;

impl Pair {
    /// A new client connection.
    pub fn connect(&mut self) -> ConnId {
        let conn = self.next_conn;
        self.next_conn += 1;
        self.clients.insert(conn, Client::default());
        self.input(Input::ConnOpened { conn });
        self.settle();
        conn
    }

    /// A client frame.
    pub fn send(&mut self, conn: ConnId, text: &str) {
        self.input(Input::ConnFrame { conn, text });
        self.settle();
    }

    /// The client closes its socket.
    pub fn disconnect(&mut self, conn: ConnId) {
        self.input(Input::ConnClosed { conn });
        self.clients.remove(&conn);
        self.settle();
    }

    /// Stalls (`true`) or resumes a client's reading; resuming reads what piled up.
    pub fn stall(&mut self, conn: ConnId, stalled: bool) {
        if let Some(c) = self.clients.get_mut(&conn) {
            c.stalled = stalled;
            if !stalled {
                for (text, _) in std::mem::take(&mut c.unread) {
                    c.frames.push_back(serde_json::from_str(&text).unwrap());
                }
            }
        }
    }

    /// A control request; the host's answer, if it answered before things settled.
    pub fn control(&mut self, request: ControlRequest) -> Option<ControlReply> {
        let id = self.next_request;
        self.next_request += 1;
        self.input(Input::Control { id, request });
        self.settle();
        self.replies.remove(&id)
    }

    /// The client's next frame (panics when there is none).
    pub fn next(&mut self, conn: ConnId) -> Value {
        self.clients
            .get_mut(&conn)
            .and_then(|c| c.frames.pop_front())
            .unwrap_or_else(|| panic!("client {conn} has no frame"))
    }

    /// The client's next frame, which must be of type `t`.
    pub fn expect_t(&mut self, conn: ConnId, t: &str) -> Value {
        let v = self.next(conn);
        assert_eq!(v["t"], t, "expected a {t} frame, got {v}");
        v
    }

    /// Every frame the client has not read yet.
    pub fn drain(&mut self, conn: ConnId) -> Vec<Value> {
        self.clients
            .get_mut(&conn)
            .map(|c| c.frames.drain(..).collect())
            .unwrap_or_default()
    }

    /// `nhello` → seq-0 `nbatch` → `progress`; returns the snapshot.
    pub fn subscribed(&mut self, conn: ConnId) -> Value {
        self.expect_t(conn, "nhello");
        let snap = self.expect_t(conn, "nbatch");
        assert_eq!(snap["batch"]["seq"], 0, "{snap}");
        self.expect_t(conn, "progress");
        snap
    }

    /// A lease token for `ast` and `sub`, valid `ttl_ms` from now.
    pub fn token(&self, ast: &str, sub: &str, ttl_ms: u64) -> String {
        let ast = rindle_room_core::json::tree::JsValue::parse(ast).unwrap();
        rindle_room_core::token::mint(&rindle_room_core::token::MintOptions {
            doc: DOC,
            ast: Some(&ast),
            sub,
            kid: KID,
            key: KEY,
            ttl_ms: ttl_ms as f64,
            now_ms: self.now as f64,
            scopes_hash: None,
        })
        .unwrap()
    }

    /// A client that inited `client` and subscribed the notes as `sub` (and the lmid
    /// query, when `lmid`), the answers consumed.
    pub fn subscriber(&mut self, client: &str, sub: &str, lmid: bool) -> ConnId {
        let c = self.connect();
        self.send(c, &format!(r#"{{"t":"init","clientID":"{client}"}}"#));
        if lmid {
            self.send(
                c,
                r#"{"t":"subscribe","queryId":0,"name":"_rindle/clientLmid"}"#,
            );
        }
        let tok = self.token(NOTES, sub, 600_000);
        self.send(c, &subscribe_frame(1, &tok));
        // Each subscribe is answered nhello → seq-0 nbatch → progress; with an authority
        // the lmid one comes after the lease one (the room fetches the clientID's lmid
        // once the connection is authenticated).
        let mut answered = 0;
        let want = if lmid { 2 } else { 1 };
        let mut waited = 0;
        while answered < want {
            match self.clients.get_mut(&c).and_then(|x| x.frames.pop_front()) {
                Some(v) if v["t"] == "progress" => answered += 1,
                Some(v) => assert!(
                    v["t"] == "nhello" || (v["t"] == "nbatch" && v["batch"]["seq"] == 0),
                    "unexpected while subscribing: {v}"
                ),
                None => {
                    waited += 1;
                    assert!(waited <= 5_000, "{client}'s subscribes were not answered");
                    self.advance(1);
                }
            }
        }
        c
    }

    /// How many log lines contain `needle`.
    pub fn log_count(&self, needle: &str) -> usize {
        self.logs.iter().filter(|(_, l)| l.contains(needle)).count()
    }
}

/// A lease-token subscribe frame.
pub fn subscribe_frame(qid: u64, token: &str) -> String {
    format!(r#"{{"t":"subscribe","queryId":{qid},"leaseToken":"{token}"}}"#)
}

/// A `pushMutation` frame.
pub fn push(client: &str, mid: u64, name: &str, args: &str) -> String {
    format!(
        r#"{{"t":"pushMutation","envelope":{{"clientID":"{client}","mid":{mid},"name":"{name}","args":{args}}}}}"#
    )
}

/// The `(clientID, lmid)` an lmid-query frame carries, if it is one.
pub fn lmid_of(v: &Value) -> Option<(String, u64)> {
    if v["t"] != "nbatch" || v["queryId"] != 0 {
        return None;
    }
    let op = &v["batch"]["ops"][0];
    let row = if op["op"] == "edit" {
        &op["new"]
    } else {
        &op["row"]
    };
    Some((row[0].as_str()?.to_string(), row[1].as_u64()?))
}
