//! Validation: every rule that needs no room schema, section by section, returning the
//! first violation with the option's name and a fix.

use super::{
    invalid, Config, ConfigError, DownstreamConfig, FleetConfig, JournalConfig, UpstreamConfig,
    WritesConfig, ENV_CONTROL_AUTH_TOKEN, ENV_TOKEN_KEYS, ENV_UPSTREAM_AUTH_TOKEN,
};

impl Config {
    /// Checks every rule that needs no room schema; the first violation is returned.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_server()?;
        if let Some(fleet) = &self.fleet {
            self.validate_fleet(fleet)?;
        } else {
            self.validate_sources()?;
        }
        self.downstream.validate(self.fleet.is_some())?;
        if let Some(control) = &self.control {
            if control.auth_token.is_empty() {
                return Err(invalid(
                    "control.auth_token",
                    format!(
                        "`control.auth_token` is empty: set it under [control] or in \
                         {ENV_CONTROL_AUTH_TOKEN} (or remove [control] to run without a \
                         control plane)"
                    ),
                ));
            }
            if control.bind.is_empty() || control.bind.chars().any(char::is_whitespace) {
                return Err(invalid(
                    "control.bind",
                    format!(
                        "`control.bind` = {:?} is not an address: use an IP address such as \
                         \"127.0.0.1\" (the default) or \"0.0.0.0\"",
                        control.bind
                    ),
                ));
            }
            if control.port != 0 && control.port == self.server.port {
                return Err(invalid(
                    "control.port",
                    format!(
                        "`control.port` = {} is also `server.port`: give the control plane \
                         its own port (or 0 for an ephemeral one)",
                        control.port
                    ),
                ));
            }
        }
        if let Some(writes) = &self.writes {
            writes.validate()?;
        }
        if let Some(authority) = &self.authority {
            if self.writes.is_none() {
                return Err(invalid(
                    "authority",
                    "[authority] is set but [writes] is not: a read-only room has nothing to \
                     flush; add [writes] or remove [authority]",
                ));
            }
            crate::authority::HttpAuthority::new(authority)
                .map_err(|e| invalid(e.option(), e.to_string()))?;
        }
        self.validate_mutators()
    }

    /// Single-room mode: exactly one source of rows.
    fn validate_sources(&self) -> Result<(), ConfigError> {
        match (&self.upstream, &self.demo) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "upstream",
                    "both [upstream] and [demo] are set: a room has one source of rows; keep \
                     [upstream] to follow rindled, or [demo] to serve a local JSON file",
                ))
            }
            (None, None) => {
                return Err(invalid(
                    "upstream",
                    "neither [upstream] nor [demo] is set: add [upstream] (ws_url, \
                     control_url, footprint_ast) to follow rindled, or [demo] (data = \
                     \"rows.json\") to serve a local JSON file",
                ))
            }
            (Some(upstream), None) => upstream.validate()?,
            (None, Some(demo)) => {
                if demo.data.as_os_str().is_empty() {
                    return Err(invalid(
                        "demo.data",
                        "`demo.data` is empty: set it to the JSON file holding the tables",
                    ));
                }
            }
        }
        Ok(())
    }

    /// Fleet mode: the API server hands each room its doc, lease and flush endpoints.
    fn validate_fleet(&self, fleet: &FleetConfig) -> Result<(), ConfigError> {
        fleet.validate()?;
        let single = [
            ("upstream", self.upstream.is_some(), "[upstream]"),
            ("demo", self.demo.is_some(), "[demo]"),
            ("authority", self.authority.is_some(), "[authority]"),
            (
                "downstream.doc_id",
                !self.downstream.doc_id.is_empty(),
                "`downstream.doc_id`",
            ),
            (
                "downstream.max_room_bytes",
                self.downstream.max_room_bytes.is_some(),
                "`downstream.max_room_bytes` (a fleet's rooms take `fleet.max_room_bytes`)",
            ),
        ];
        if let Some((option, _, name)) = single.iter().find(|(_, set, _)| *set) {
            return Err(invalid(
                *option,
                format!(
                    "{name} is set together with [fleet]: in fleet mode every room's doc, \
                     upstream lease and flush endpoints come from the API server's room-boot; \
                     remove {name} (or [fleet] to serve one room)"
                ),
            ));
        }
        if let Some(WritesConfig {
            journal: JournalConfig::File { .. },
            ..
        }) = &self.writes
        {
            return Err(invalid(
                "writes.journal",
                "`writes.journal` names a file together with [fleet]: each room gets its own \
                 journal under `fleet.data_dir`; remove [writes.journal] and set \
                 `fleet.data_dir`",
            ));
        }
        Ok(())
    }

    fn validate_server(&self) -> Result<(), ConfigError> {
        let bind = &self.server.bind;
        if bind.is_empty() || bind.chars().any(char::is_whitespace) {
            return Err(invalid(
                "server.bind",
                format!(
                    "`server.bind` = {bind:?} is not an address: use an IP address such as \
                     \"127.0.0.1\" or \"0.0.0.0\", or a host name"
                ),
            ));
        }
        let server = &self.server;
        if server.max_frame_bytes < 1024 {
            return Err(invalid(
                "server.max_frame_bytes",
                "`server.max_frame_bytes` must be at least 1024 (default 1048576 = 1 MiB): a \
                 subscribe carrying a lease token alone takes hundreds of bytes",
            ));
        }
        if server.max_inbound_bytes < server.max_frame_bytes {
            return Err(invalid(
                "server.max_inbound_bytes",
                format!(
                    "`server.max_inbound_bytes` ({}) must be at least `server.max_frame_bytes` \
                     ({}): one whole frame has to fit (default 4194304 = 4 MiB)",
                    server.max_inbound_bytes, server.max_frame_bytes
                ),
            ));
        }
        if server.max_unsent_bytes < 1024 * 1024 {
            return Err(invalid(
                "server.max_unsent_bytes",
                format!(
                    "`server.max_unsent_bytes` ({}) must be at least 1048576 (1 MiB; default \
                     268435456 = 256 MiB): it bounds every socket's unsent frames together",
                    server.max_unsent_bytes
                ),
            ));
        }
        if server.max_connections == Some(0) {
            return Err(invalid(
                "server.max_connections",
                "`server.max_connections` must be at least 1; leave it out for the default \
                 derived from the open-file limit",
            ));
        }
        if server.handshake_timeout_ms == 0 {
            return Err(invalid(
                "server.handshake_timeout_ms",
                "`server.handshake_timeout_ms` must be at least 1 (default 5000)",
            ));
        }
        Ok(())
    }
}

impl UpstreamConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        let ws = &self.ws_url;
        let rest = ws.strip_prefix("ws://").unwrap_or("");
        if rest.is_empty() || rest.starts_with('/') {
            let why = if ws.starts_with("wss://") {
                "wss:// is not supported (TLS is out of scope for the room; terminate it \
                 outside the room)"
            } else {
                "it must be a ws:// URL"
            };
            return Err(invalid(
                "upstream.ws_url",
                format!(
                    "`upstream.ws_url` = {ws:?}: {why}; rindled's subscription plane, e.g. \
                     \"ws://127.0.0.1:7601\""
                ),
            ));
        }
        crate::http::parse_url(&self.control_url).map_err(|e| {
            invalid(
                "upstream.control_url",
                format!(
                    "`upstream.control_url`: {e}; rindled's control plane, e.g. \
                     \"http://127.0.0.1:7600\""
                ),
            )
        })?;
        if self.auth_token.as_deref() == Some("") {
            return Err(invalid(
                "upstream.auth_token",
                format!(
                    "`upstream.auth_token` is empty: set the token, remove the option if \
                     rindled runs unauthenticated, or set {ENV_UPSTREAM_AUTH_TOKEN}"
                ),
            ));
        }
        self.footprint_ast_json()?;
        if self.lease_ttl_ms == Some(0) {
            return Err(invalid(
                "upstream.lease_ttl_ms",
                "`upstream.lease_ttl_ms` = 0 would expire every lease at once: give a \
                 positive TTL in ms, or remove it for rindled's default",
            ));
        }
        if self.max_frame_bytes == 0 {
            return Err(invalid(
                "upstream.max_frame_bytes",
                "`upstream.max_frame_bytes` must be at least 1 (default 268435456 = 256 MiB); \
                 0 would refuse every snapshot",
            ));
        }
        if self.client_id.as_deref() == Some("") {
            return Err(invalid(
                "upstream.client_id",
                "`upstream.client_id` is empty: set a name, or remove it for the default \
                 `room-shell-<bootId>`",
            ));
        }
        Ok(())
    }
}

impl DownstreamConfig {
    fn validate(&self, fleet: bool) -> Result<(), ConfigError> {
        if self.doc_id.is_empty() && !fleet {
            return Err(invalid(
                "downstream.doc_id",
                "`downstream.doc_id` is empty or missing: set `doc_id = …` under [downstream] \
                 to the document id lease tokens are minted for (or add [fleet] to serve many \
                 rooms, each named by its URL)",
            ));
        }
        if self.token_keys.is_empty() {
            return Err(invalid(
                "downstream.token_keys",
                format!(
                    "`downstream.token_keys` is empty, so no lease token could be verified: \
                     add `[downstream.token_keys]` with `k1 = \"<secret>\"`, or set \
                     {ENV_TOKEN_KEYS}=k1=<secret>"
                ),
            ));
        }
        for (kid, secret) in &self.token_keys {
            if kid.is_empty() {
                return Err(invalid(
                    "downstream.token_keys",
                    "`downstream.token_keys` has an empty key id: name every key",
                ));
            }
            if secret.is_empty() {
                return Err(invalid(
                    format!("downstream.token_keys.{kid}"),
                    format!(
                        "the secret of key {kid:?} is empty: set it in the file or in \
                         {ENV_TOKEN_KEYS}"
                    ),
                ));
            }
        }
        if self.max_room_bytes == Some(0) {
            return Err(invalid(
                "downstream.max_room_bytes",
                "`downstream.max_room_bytes` must be at least 1 (the bytes the room may \
                 retain); leave it out for no budget",
            ));
        }
        if self.sweep_interval_ms == 0 {
            return Err(invalid(
                "downstream.sweep_interval_ms",
                "`downstream.sweep_interval_ms` must be at least 1 (the sweep cadence in ms; \
                 default 1000)",
            ));
        }
        if self.send_budget_bytes == 0 {
            return Err(invalid(
                "downstream.send_budget_bytes",
                "`downstream.send_budget_bytes` must be at least 1 (default 4194304 = 4 MiB); \
                 0 would close every socket",
            ));
        }
        let at_least_one = [
            (
                "first_frame_timeout_ms",
                self.first_frame_timeout_ms == 0,
                "30000",
            ),
            (
                "max_subscriptions_per_conn",
                self.max_subscriptions_per_conn == 0,
                "1000",
            ),
            (
                "max_snapshot_bytes",
                self.max_snapshot_bytes == 0,
                "67108864 = 64 MiB",
            ),
            (
                "max_materializations",
                self.max_materializations == 0,
                "10000",
            ),
            (
                "max_query_bytes",
                self.max_query_bytes == 0,
                "268435456 = 256 MiB",
            ),
            ("max_held_rows", self.max_held_rows == 0, "10000000"),
        ];
        for (name, zero, default) in at_least_one {
            if zero {
                return Err(invalid(
                    format!("downstream.{name}"),
                    format!("`downstream.{name}` must be at least 1 (default {default})"),
                ));
            }
        }
        Ok(())
    }
}

impl WritesConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        let option = "writes.owned_tables";
        if self.owned_tables.is_empty() {
            return Err(invalid(
                option,
                "`writes.owned_tables` is empty: list the tables mutators may write, or \
                 remove [writes] to run read-only",
            ));
        }
        for (i, table) in self.owned_tables.iter().enumerate() {
            if table.is_empty() {
                return Err(invalid(option, "`writes.owned_tables` has an empty name"));
            }
            if table.starts_with("_rindle_") {
                return Err(invalid(
                    option,
                    format!(
                        "`writes.owned_tables` names {table:?}: `_rindle_*` tables belong to \
                         the room and are never writable"
                    ),
                ));
            }
            if self.owned_tables[..i].contains(table) {
                return Err(invalid(
                    option,
                    format!("`writes.owned_tables` names {table:?} twice"),
                ));
            }
        }
        self.scopes_json()?;
        if let JournalConfig::File { path } = &self.journal {
            if path.as_os_str().is_empty() {
                return Err(invalid(
                    "writes.journal.path",
                    "`writes.journal.path` is empty: set the journal file",
                ));
            }
        }
        if self.flush_dirty_max == 0 {
            return Err(invalid(
                "writes.flush_dirty_max",
                "`writes.flush_dirty_max` must be at least 1 (default 512)",
            ));
        }
        Ok(())
    }
}
