//! `RoomHost`: the core's room host for the Node shell. `shell/shell.js` is a driver:
//! it owns the upstream `ws` link, the HTTP servers, the journal's and authority's
//! promises and one timer, feeds each event in through a method here, and carries out
//! what [`RoomHost::poll`] hands back. Every room rule is the host's.
//!
//! Downstream sockets are native (`sockets.rs`, [`RoomHost::listen`]): their frames go
//! from the host to the connection's queue inside `poll`, without JavaScript, and their
//! backlog is read natively; client events come back through `pumpSockets`. Connections
//! fed in by hand (`connOpened` / `connFrame` / `connClosed`, for a driver with its own
//! sockets) come back as `Send` / `Close` / `Terminate` outputs, and their backlog is the
//! optional `backlog(conn)` callback's (`[live, snapshot]` bytes not yet written).
//!
//! Mutators run synchronously inside the input methods: the host calls the shell's
//! `runMutator(name, argsText, user)` with the transaction current (`tx.rs`); it answers
//! `""` (done), `"U"` (unknown), `"R:<reason>"` (rejected) or `"E:<message>"`
//! (environment shortfall).
//!
//! Outputs come back flat (cheap to build, cheap to walk): the core's one output
//! encoding (`rindle_room_core::host::encode`, the same walk the C library writes as
//! JSON) with the names dropped — a kind number, then its fields in order. The shell
//! reads the kind numbers from [`output_kinds`]. Structured fields (journal entries,
//! records, a control reply's value) are JSON text; frames are the texts to send.

// napi-rs registers the `#[napi]` functions below only outside `cfg(test)`.
#![cfg_attr(test, allow(dead_code))]

use napi::bindgen_prelude::{AsyncTask, FnArgs, Function, FunctionRef, ToNapiValue};
use napi::{sys, Env};
use napi_derive::napi;
use rindle_room_core::host::encode::{encode_output, output_kinds_json, OutputKind, OutputSink};
use rindle_room_core::host::{
    json, Backlog, ControlReply, ControlRequest, Driver, Host, Input, JournalEntry, MutatorOutcome,
};
use rindle_room_core::json::write::write_str;
use rindle_room_core::{MutationTx, TableSchema};

use rindle_room_downstream::ConnEvent;

use crate::boundary::{guard, Cx, Failure};
use crate::sockets::{self, Sockets};

/// One value of the flat output array.
#[derive(Debug)]
pub enum Item {
    /// A number.
    N(f64),
    /// A string.
    S(String),
    /// A boolean.
    B(bool),
    /// A name from a fixed set (a log level, a control reply's kind): no allocation.
    W(&'static str),
}

impl ToNapiValue for Item {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        // SAFETY: forwarded from the caller (a live env of the current call).
        unsafe {
            match val {
                Item::N(n) => f64::to_napi_value(env, n),
                Item::S(s) => String::to_napi_value(env, s),
                Item::B(b) => bool::to_napi_value(env, b),
                Item::W(w) => <&str>::to_napi_value(env, w),
            }
        }
    }
}

type MutatorFn = FunctionRef<FnArgs<(String, Option<String>, String)>, String>;
type BacklogFn = FunctionRef<f64, Vec<f64>>;

/// The driver the host calls while it handles one input from the shell.
struct JsDriver<'a> {
    env: &'a Env,
    run_mutator: &'a MutatorFn,
    backlog: &'a Option<BacklogFn>,
    tables_known: &'a Option<FunctionRef<String, String>>,
    sockets: Option<&'a Sockets>,
}

impl Driver for JsDriver<'_> {
    fn run_mutator(
        &mut self,
        name: &str,
        tx: &mut MutationTx<'_>,
        args: Option<&str>,
        user: &str,
    ) -> MutatorOutcome {
        let called = crate::tx::with_current(tx, || {
            self.run_mutator.borrow_back(self.env).and_then(|f| {
                f.call(FnArgs::from((
                    name.to_string(),
                    args.map(str::to_string),
                    user.to_string(),
                )))
            })
        });
        match called {
            Ok(s) if s.is_empty() => MutatorOutcome::Done,
            Ok(s) if s == "U" => MutatorOutcome::Unknown,
            Ok(s) => match s.split_at_checked(2) {
                Some(("E:", m)) => MutatorOutcome::Environment(m.to_string()),
                Some(("R:", m)) => MutatorOutcome::Rejected(m.to_string()),
                _ => MutatorOutcome::Rejected(s),
            },
            Err(e) => MutatorOutcome::Rejected(format!("mutator `{name}` failed: {}", e.reason)),
        }
    }

    fn tables_known(
        &mut self,
        tables: &[TableSchema],
    ) -> Result<(), rindle_room_core::host::TablesError> {
        let Some(f) = self.tables_known else {
            return Ok(());
        };
        let mut json = String::from("[");
        for (i, t) in tables.iter().enumerate() {
            if i > 0 {
                json.push(',');
            }
            t.write_json(&mut json);
        }
        json.push(']');
        match f.borrow_back(self.env).and_then(|f| f.call(json)) {
            Ok(e) if e.is_empty() => Ok(()),
            Ok(e) => Err(e.into()),
            Err(e) => Err(e.reason.into()),
        }
    }

    fn backlog(&self, conn: u64) -> Backlog {
        if let Some(s) = self.sockets.filter(|s| s.has(conn)) {
            return s.backlog(conn);
        }
        let Some(backlog) = self.backlog else {
            return Backlog::default();
        };
        let got = backlog
            .borrow_back(self.env)
            .and_then(|f| f.call(conn as f64));
        match got {
            Ok(v) => Backlog {
                live: v.first().copied().unwrap_or(0.0) as usize,
                snapshot: v.get(1).copied().unwrap_or(0.0) as usize,
            },
            Err(_) => Backlog::default(),
        }
    }
}

fn bad(message: String) -> Failure {
    Failure::ArgType(message)
}

/// The core's room host, driven by the Node shell.
#[napi]
#[allow(missing_debug_implementations)] // holds JavaScript function references
pub struct RoomHost {
    host: Host,
    run_mutator: MutatorFn,
    backlog: Option<BacklogFn>,
    tables_known: Option<FunctionRef<String, String>>,
    /// The native downstream sockets, once `listen` bound them.
    sockets: Option<Sockets>,
}

impl RoomHost {
    fn feed(
        &mut self,
        env: &Env,
        what: &'static str,
        now: f64,
        input: Input<'_>,
    ) -> napi::Result<()> {
        let cx = Cx::new(env, what);
        let Self {
            host,
            run_mutator,
            backlog,
            tables_known,
            sockets,
        } = self;
        let mut d = JsDriver {
            env,
            run_mutator,
            backlog,
            tables_known,
            sockets: sockets.as_ref(),
        };
        cx.settle(guard(|| {
            host.handle(now as u64, input, &mut d);
            Ok(())
        }))
    }

    fn sockets_mut(&mut self) -> Option<&mut Sockets> {
        self.sockets.as_mut()
    }
}

#[napi]
impl RoomHost {
    /// `new RoomHost(configJson, runMutator, backlog?, tablesKnown?)`.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        config_json: String,
        run_mutator: MutatorFn,
        backlog: Option<BacklogFn>,
        tables_known: Option<FunctionRef<String, String>>,
    ) -> napi::Result<RoomHost> {
        let cx = Cx::new(&env, "RoomHost");
        let host = cx.settle(guard(|| {
            let cfg = json::config_from_json(&config_json).map_err(|e| bad(e.to_string()))?;
            Host::new(cfg).map_err(|e| {
                Failure::Room(rindle_room_core::Error::new(
                    rindle_room_core::ErrorCode::InvalidArgument,
                    e.to_string(),
                ))
            })
        }))?;
        Ok(RoomHost {
            host,
            run_mutator,
            backlog,
            tables_known,
            sockets: None,
        })
    }

    /// Starts the host (start-up I/O follows in the outputs).
    #[napi]
    pub fn start(&mut self, now: f64) {
        self.host.start(now as u64);
    }

    /// `rindled`'s `/materialize` answered `status` with `body`: the host reads the
    /// lease from it, or the error (and whether start-up tries again).
    #[napi(js_name = "leaseAnswered")]
    pub fn lease_answered(
        &mut self,
        env: Env,
        now: f64,
        status: u32,
        body: String,
    ) -> napi::Result<()> {
        let status = u16::try_from(status).unwrap_or(u16::MAX);
        let result = rindle_room_core::host::lease_reply(status, &body);
        self.feed(
            &env,
            "RoomHost.leaseAnswered",
            now,
            Input::LeaseMinted(result),
        )
    }

    /// A lease mint finished without an answer from `rindled` (`error`: why — the host
    /// tries again during start-up), or with a token.
    #[napi(js_name = "leaseMinted")]
    pub fn lease_minted(
        &mut self,
        env: Env,
        now: f64,
        token: Option<String>,
        error: Option<String>,
    ) -> napi::Result<()> {
        let result = match (token, error) {
            (Some(t), None) => Ok(t),
            (_, e) => Err(e.unwrap_or_default().into()),
        };
        self.feed(
            &env,
            "RoomHost.leaseMinted",
            now,
            Input::LeaseMinted(result),
        )
    }

    /// Upstream link `link` opened.
    #[napi(js_name = "upstreamOpened")]
    pub fn upstream_opened(&mut self, env: Env, now: f64, link: f64) -> napi::Result<()> {
        let link = link as u64;
        self.feed(
            &env,
            "RoomHost.upstreamOpened",
            now,
            Input::UpstreamOpened { link },
        )
    }

    /// A frame from upstream link `link`.
    #[napi(js_name = "upstreamFrame")]
    pub fn upstream_frame(
        &mut self,
        env: Env,
        now: f64,
        link: f64,
        text: String,
    ) -> napi::Result<()> {
        let input = Input::UpstreamFrame {
            link: link as u64,
            text: &text,
        };
        self.feed(&env, "RoomHost.upstreamFrame", now, input)
    }

    /// Upstream link `link` showed it is alive without a whole frame (a pong, a ping,
    /// bytes of a frame arriving).
    #[napi(js_name = "upstreamHeard")]
    pub fn upstream_heard(&mut self, env: Env, now: f64, link: f64) -> napi::Result<()> {
        let input = Input::UpstreamHeard { link: link as u64 };
        self.feed(&env, "RoomHost.upstreamHeard", now, input)
    }

    /// Upstream link `link` closed (`error` when it failed).
    #[napi(js_name = "upstreamClosed")]
    pub fn upstream_closed(
        &mut self,
        env: Env,
        now: f64,
        link: f64,
        error: Option<String>,
    ) -> napi::Result<()> {
        let input = Input::UpstreamClosed {
            link: link as u64,
            error: error.as_deref(),
        };
        self.feed(&env, "RoomHost.upstreamClosed", now, input)
    }

    /// A downstream socket completed its upgrade.
    #[napi(js_name = "connOpened")]
    pub fn conn_opened(&mut self, env: Env, now: f64, conn: f64) -> napi::Result<()> {
        let conn = conn as u64;
        self.feed(&env, "RoomHost.connOpened", now, Input::ConnOpened { conn })
    }

    /// A downstream frame.
    #[napi(js_name = "connFrame")]
    pub fn conn_frame(&mut self, env: Env, now: f64, conn: f64, text: String) -> napi::Result<()> {
        let input = Input::ConnFrame {
            conn: conn as u64,
            text: &text,
        };
        self.feed(&env, "RoomHost.connFrame", now, input)
    }

    /// A downstream socket closed.
    #[napi(js_name = "connClosed")]
    pub fn conn_closed(&mut self, env: Env, now: f64, conn: f64) -> napi::Result<()> {
        let conn = conn as u64;
        self.feed(&env, "RoomHost.connClosed", now, Input::ConnClosed { conn })
    }

    /// A journal read finished: the contents as JSON, or `error`.
    #[napi(js_name = "journalRead")]
    pub fn journal_read(
        &mut self,
        env: Env,
        now: f64,
        io: f64,
        contents_json: Option<String>,
        error: Option<String>,
    ) -> napi::Result<()> {
        let result = match (contents_json, error) {
            (Some(c), None) => json::contents_from_json(&c)
                .map_err(|e| rindle_room_core::host::JournalError::Unreadable(e.to_string())),
            (_, e) => Err(e.unwrap_or_default().into()),
        };
        let input = Input::JournalRead {
            io: io as u64,
            result,
        };
        self.feed(&env, "RoomHost.journalRead", now, input)
    }

    /// A journal write finished: `error` null once durable.
    #[napi(js_name = "journalWritten")]
    pub fn journal_written(
        &mut self,
        env: Env,
        now: f64,
        io: f64,
        error: Option<String>,
    ) -> napi::Result<()> {
        let input = Input::JournalWritten {
            io: io as u64,
            result: error.map_or(Ok(()), |e| Err(e.into())),
        };
        self.feed(&env, "RoomHost.journalWritten", now, input)
    }

    /// An authority call finished: `{claimed}`, `{lmids}`, `{applied}`, `{retryable}`
    /// or `{fatal}` as JSON.
    #[napi]
    pub fn authority(
        &mut self,
        env: Env,
        now: f64,
        io: f64,
        result_json: String,
    ) -> napi::Result<()> {
        let input = Input::Authority {
            io: io as u64,
            result: json::authority_result_from_json(&result_json),
        };
        self.feed(&env, "RoomHost.authority", now, input)
    }

    /// A control request `{kind, user?}`; answered by a `ControlReply` output with `id`.
    #[napi]
    pub fn control(
        &mut self,
        env: Env,
        now: f64,
        id: f64,
        request_json: String,
    ) -> napi::Result<()> {
        let cx = Cx::new(&env, "RoomHost.control");
        let request = cx.settle(
            json::control_request_from_json(&request_json).map_err(|e| bad(e.to_string())),
        )?;
        let input = Input::Control {
            id: id as u64,
            request,
        };
        self.feed(&env, "RoomHost.control", now, input)
    }

    /// Fires every timer due at `now`.
    #[napi]
    pub fn timeout(&mut self, env: Env, now: f64) -> napi::Result<()> {
        let cx = Cx::new(&env, "RoomHost.timeout");
        let Self {
            host,
            run_mutator,
            backlog,
            tables_known,
            sockets,
        } = self;
        let mut d = JsDriver {
            env: &env,
            run_mutator,
            backlog,
            tables_known,
            sockets: sockets.as_ref(),
        };
        cx.settle(guard(|| {
            host.handle_timeout(now as u64, &mut d);
            Ok(())
        }))
    }

    /// The next time `timeout` is due, or `null`.
    #[napi(js_name = "nextDeadline")]
    pub fn next_deadline(&self) -> Option<f64> {
        self.host.next_deadline().map(|d| d as f64)
    }

    /// Whether the current incarnation is live.
    #[napi(js_name = "isLive")]
    pub fn is_live(&self) -> bool {
        self.host.is_live()
    }

    /// The current incarnation's bootId.
    #[napi(js_name = "bootId")]
    pub fn boot_id(&self) -> String {
        self.host.boot_id().to_string()
    }

    /// The room's cv, if live.
    #[napi]
    pub fn cv(&self) -> Option<f64> {
        self.host.room().and_then(|r| r.cv())
    }

    /// The control plane's `/metrics` page: the core's Prometheus text of the host's
    /// counters and gauges and the native sockets' counts (the smol server's page,
    /// without its journal-latency histogram).
    #[napi]
    pub fn metrics(&self) -> String {
        let sockets = self.sockets.as_ref().map(|s| s.stats()).unwrap_or([0.0; 4]);
        let counts = rindle_room_core::host::SocketCounts {
            connections_refused: sockets[1] as u64,
            handshake_timeouts: sockets[2] as u64,
            protocol_closes: sockets[3] as u64,
        };
        let mut out = String::with_capacity(4096);
        rindle_room_core::host::render_prometheus(
            &mut out,
            self.host.counters(),
            &self.host.gauges(),
            &counts,
        );
        out
    }

    /// The upstream epoch of the current incarnation, if any.
    #[napi]
    pub fn epoch(&self) -> Option<f64> {
        self.host.room().map(|r| r.epoch() as f64)
    }

    /// Everything the host asks, flattened (see the module docs). Frames, closes and
    /// terminations for native sockets are carried out here and not returned.
    #[napi]
    pub fn poll(&mut self) -> Vec<Item> {
        let mut out = Vec::new();
        while let Some(o) = self.host.poll_output() {
            let o = match self.sockets.as_mut() {
                Some(s) => match s.carry(o) {
                    Some(o) => o,
                    None => continue,
                },
                None => o,
            };
            encode_output(o, &mut Flat(&mut out));
        }
        out
    }

    /// Serves downstream clients natively on `127.0.0.1:port` (0 = ephemeral) with the
    /// limits `{maxFrameBytes, maxInboundBytes, maxConnections, handshakeTimeoutMs}`
    /// (JSON); `wake()` is called whenever client events wait, and the shell answers
    /// with `pumpSockets`. Returns the bound port.
    #[napi]
    pub fn listen(
        &mut self,
        env: Env,
        port: u32,
        limits_json: String,
        wake: Function<'_, (), ()>,
    ) -> napi::Result<u32> {
        let cx = Cx::new(&env, "RoomHost.listen");
        let limits =
            cx.settle(sockets::limits_from_json(&limits_json).map_err(|e| bad(e.to_string())))?;
        let port = u16::try_from(port).map_err(|_| {
            napi::Error::new(
                napi::Status::InvalidArg,
                format!("port {port} is out of range"),
            )
        })?;
        if self.sockets.is_some() {
            return Err(napi::Error::new(
                napi::Status::GenericFailure,
                "RoomHost.listen: already listening",
            ));
        }
        let wake = wake
            .build_threadsafe_function::<()>()
            .callee_handled::<false>()
            .build()?;
        let sockets = Sockets::listen(port, limits, wake).map_err(|e| {
            napi::Error::new(
                napi::Status::GenericFailure,
                format!("cannot listen on 127.0.0.1:{port}: {e}"),
            )
        })?;
        let bound = sockets.port();
        self.sockets = Some(sockets);
        Ok(u32::from(bound))
    }

    /// Feeds every client event that waits (opens, frames, closes) into the host.
    #[napi(js_name = "pumpSockets")]
    pub fn pump_sockets(&mut self, env: Env, now: f64) -> napi::Result<()> {
        let Some(events) = self.sockets_mut().map(Sockets::take_events) else {
            return Ok(());
        };
        for e in events {
            match e {
                ConnEvent::Open { id, out } => {
                    if let Some(s) = self.sockets_mut() {
                        s.opened(id, out);
                    }
                    self.feed(
                        &env,
                        "RoomHost.pumpSockets",
                        now,
                        Input::ConnOpened { conn: id },
                    )?;
                }
                ConnEvent::Frame { id, text, slot } => {
                    let input = Input::ConnFrame {
                        conn: id,
                        text: &text,
                    };
                    self.feed(&env, "RoomHost.pumpSockets", now, input)?;
                    // Frees the connection's inbound window.
                    drop(slot);
                }
                ConnEvent::Heard { id, slot } => {
                    let input = Input::ConnHeard { conn: id };
                    self.feed(&env, "RoomHost.pumpSockets", now, input)?;
                    drop(slot);
                }
                ConnEvent::Closed { id } => {
                    if let Some(s) = self.sockets_mut() {
                        s.closed(id);
                    }
                    self.feed(
                        &env,
                        "RoomHost.pumpSockets",
                        now,
                        Input::ConnClosed { conn: id },
                    )?;
                }
            }
        }
        Ok(())
    }

    /// Stops accepting new sockets; with `terminate`, also drops every open one.
    #[napi(js_name = "stopSockets")]
    pub fn stop_sockets(&mut self, terminate: bool) {
        if let Some(s) = self.sockets_mut() {
            s.stop_accepting();
            if terminate {
                s.terminate_all();
            }
        }
    }

    /// `[open sockets, refused upgrades, handshake timeouts, protocol closes]`.
    #[napi(js_name = "socketStats")]
    pub fn socket_stats(&self) -> Vec<f64> {
        self.sockets
            .as_ref()
            .map_or(vec![0.0; 4], |s| s.stats().to_vec())
    }

    /// Resolves once every native socket is gone, or after `limitMs`, to how many are
    /// still open.
    #[napi(js_name = "socketsDrained")]
    pub fn sockets_drained(&self, limit_ms: f64) -> Option<AsyncTask<sockets::Drained>> {
        let limit = std::time::Duration::from_millis(limit_ms.max(0.0) as u64);
        self.sockets
            .as_ref()
            .map(|s| AsyncTask::new(s.drained(limit)))
    }
}

/// The core's output encoding ([`encode_output`]) onto the flat array: each value in
/// order, names dropped.
struct Flat<'a>(&'a mut Vec<Item>);

impl OutputSink for Flat<'_> {
    fn kind(&mut self, kind: OutputKind) {
        self.0.push(Item::N(f64::from(kind.code())));
    }
    fn number(&mut self, _: &'static str, value: u64) {
        self.0.push(Item::N(value as f64));
    }
    fn flag(&mut self, _: &'static str, value: bool) {
        self.0.push(Item::B(value));
    }
    fn text(&mut self, _: &'static str, value: String) {
        self.0.push(Item::S(value));
    }
    fn word(&mut self, _: &'static str, value: &'static str) {
        self.0.push(Item::W(value));
    }
    fn json(&mut self, _: &'static str, value: String) {
        self.0.push(Item::S(value));
    }
    fn optional_json(&mut self, _: &'static str, value: Option<String>) {
        self.0.push(value.map_or(Item::W(""), Item::S));
    }
    fn journal_entries(&mut self, _: &'static str, entries: &[JournalEntry]) {
        // Opaque record strings: a JavaScript journal stores them as they are.
        self.0.push(Item::S(json::records_json(entries)));
    }
    fn begin(&mut self, _: &'static str) {}
    fn end(&mut self) {}
}

/// The output kinds `poll` uses, `{name: number}` as JSON (the core's [`OutputKind`]):
/// the shell reads them here instead of keeping a copy.
#[napi(js_name = "outputKinds")]
pub fn output_kinds() -> String {
    output_kinds_json()
}

/// The control plane's limits (the core's `host::ControlLimits`) as JSON: the shell's
/// control server holds its clients to the same bounds as the smol server's.
#[napi(js_name = "controlLimits")]
pub fn control_limits() -> String {
    rindle_room_core::host::ControlLimits::default().to_json()
}

/// Every default the shell would otherwise write again, as JSON (the core's
/// [`json::defaults_json`]): the host's settings and the socket limits.
#[napi(js_name = "hostDefaults")]
pub fn host_defaults() -> String {
    json::defaults_json()
}

/// Routes one control-plane request (the host's router): `[status, body]`, or
/// `[0, requestJson]` for the host, or `[1, ""]` for the metrics page.
#[napi(js_name = "routeControl")]
pub fn route_control(
    method: String,
    path: String,
    authorization: Option<String>,
    body: String,
    token: String,
) -> Vec<Item> {
    use rindle_room_core::host::ControlRoute;
    match rindle_room_core::host::route_control(
        &method,
        &path,
        authorization.as_deref(),
        &body,
        &token,
    ) {
        ControlRoute::Reply(status, body) => vec![Item::N(f64::from(status)), Item::S(body)],
        ControlRoute::Metrics => vec![Item::N(1.0), Item::S(String::new())],
        ControlRoute::Host(request) => {
            let json = match request {
                ControlRequest::Stats => String::from("{\"kind\":\"stats\"}"),
                ControlRequest::Health => String::from("{\"kind\":\"health\"}"),
                ControlRequest::Ready => String::from("{\"kind\":\"ready\"}"),
                ControlRequest::Drain => String::from("{\"kind\":\"drain\"}"),
                ControlRequest::Revoke { user } => {
                    let mut s = String::from("{\"kind\":\"revoke\",\"user\":");
                    write_str(&mut s, &user);
                    s.push('}');
                    s
                }
                other => format!("{{\"kind\":\"{other:?}\"}}"),
            };
            vec![Item::N(0.0), Item::S(json)]
        }
    }
}

/// The HTTP answer to a control reply, given its `kind` and `value` (JSON text, `""` when
/// it has none) as `poll` hands them out: `[status, body]` (the host's mapping).
#[napi(js_name = "controlHttp")]
pub fn control_http(kind: Option<String>, payload: String) -> Vec<Item> {
    use rindle_room_core::host::ControlRoute;
    let reply = match kind.as_deref() {
        Some("stats") => Some(ControlReply::Stats(payload)),
        Some("health") => Some(ControlReply::Health(payload == "true")),
        Some("ready") => Some(ControlReply::Ready(payload == "true")),
        Some("revoked") => Some(ControlReply::Revoked(payload.parse().unwrap_or(0))),
        Some("drained") => Some(ControlReply::Drained(Ok(payload.parse().unwrap_or(0)))),
        Some("drainFailed") => Some(ControlReply::Drained(Err(serde_json::from_str::<String>(
            &payload,
        )
        .unwrap_or(payload)
        .into()))),
        _ => None,
    };
    let (status, body) = ControlRoute::http(reply.as_ref());
    vec![Item::N(f64::from(status)), Item::S(body)]
}
