//! The HTTP write authority (the published room's `httpAuthority`; the calls are in
//! docs/design/authority.md, "The apply call"): the transport half. The request bodies and
//! the mapping of every reply to a result, a retryable or a fatal error are the host's
//! ([`rindle_room_core::host::authority_reply`]); this client sends, reads, and reports a
//! network failure or timeout as [`AuthorityError::Retryable`]. Retrying is the host's too
//! (it re-issues the same call after its backoff).

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use rindle_room_core::host::{apply_reply, claim_body, claim_reply, lmids_body, lmids_reply};

use crate::config::AuthorityConfig;
use crate::http;

/// The default per-request timeout (connect + send + receive).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The result and error types are the host's (room-core): a driver hands them to the
/// host as they are.
pub use rindle_room_core::host::{ApplyResult, AuthorityError};

/// Headers the client sets itself, so the configuration may not.
const RESERVED_HEADERS: [&str; 4] = [
    "content-type",
    "content-length",
    "transfer-encoding",
    "connection",
];

/// Why an `[authority]` section cannot make a client ([`HttpAuthority::new`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum AuthorityConfigError {
    /// One of the three URLs is not an `http://` URL the client can call.
    Url {
        /// `apply_url`, `claim_url` or `lmids_url`.
        field: &'static str,
        /// Why [`http::parse_url`] refused it.
        source: io::Error,
    },
    /// An extra header's name is not an HTTP token.
    HeaderName {
        /// The name as configured.
        name: String,
    },
    /// An extra header's value holds CR, LF or NUL.
    HeaderValue {
        /// The header's name.
        name: String,
    },
    /// An extra header is one the client sets itself (`content-type`, `content-length`,
    /// `transfer-encoding`, `connection`).
    ReservedHeader {
        /// The name as configured.
        name: String,
    },
}

impl AuthorityConfigError {
    /// The configuration option at fault (`authority.apply_url`, `authority.headers`, …).
    pub fn option(&self) -> String {
        match self {
            AuthorityConfigError::Url { field, .. } => format!("authority.{field}"),
            _ => String::from("authority.headers"),
        }
    }
}

impl fmt::Display for AuthorityConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthorityConfigError::Url { field, source } => write!(f, "authority.{field}: {source}"),
            AuthorityConfigError::HeaderName { name } => {
                write!(f, "authority.headers: invalid header name {name:?}")
            }
            AuthorityConfigError::HeaderValue { name } => write!(
                f,
                "authority.headers: header {name} has CR/LF/NUL in its value"
            ),
            AuthorityConfigError::ReservedHeader { name } => write!(
                f,
                "authority.headers: {name} is set by the authority client and cannot be \
                 configured"
            ),
        }
    }
}

impl std::error::Error for AuthorityConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AuthorityConfigError::Url { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The HTTP authority client: the API server's `apply-row-change-txn`,
/// `claim-room-epoch` and `room-lmids` endpoints.
///
/// Every request is a `POST` with `content-type: application/json` plus the configured
/// extra headers (the flush credential), over a kept-alive connection of its
/// [`http::Pool`] when one is idle, bounded by [`HttpAuthority::timeout`]. Calls are
/// independent; the type is cheap to share by reference across tasks.
#[derive(Clone)]
pub struct HttpAuthority {
    apply_url: String,
    claim_url: String,
    lmids_url: String,
    headers: Vec<(String, String)>,
    timeout: Duration,
    pool: Arc<http::Pool>,
}

impl fmt::Debug for HttpAuthority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Header values are credentials: names only.
        let names: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("HttpAuthority")
            .field("apply_url", &self.apply_url)
            .field("claim_url", &self.claim_url)
            .field("lmids_url", &self.lmids_url)
            .field("header_names", &names)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl HttpAuthority {
    /// Build from config, validating the three URLs (`http://host:port/path` only — see
    /// [`http::parse_url`]) and the extra headers (token names; no CR/LF/NUL in values;
    /// `content-type`, `content-length`, `transfer-encoding` and `connection` are refused
    /// because the client sets them itself). The timeout is [`DEFAULT_TIMEOUT`].
    pub fn new(cfg: &AuthorityConfig) -> Result<HttpAuthority, AuthorityConfigError> {
        for (field, url) in [
            ("apply_url", &cfg.apply_url),
            ("claim_url", &cfg.claim_url),
            ("lmids_url", &cfg.lmids_url),
        ] {
            http::parse_url(url).map_err(|source| AuthorityConfigError::Url { field, source })?;
        }
        let mut headers = Vec::with_capacity(cfg.headers.len() + 1);
        for (name, value) in &cfg.headers {
            let valid_name = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            let name_error = if !valid_name {
                Some(AuthorityConfigError::HeaderName { name: name.clone() })
            } else if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                Some(AuthorityConfigError::HeaderValue { name: name.clone() })
            } else if RESERVED_HEADERS
                .iter()
                .any(|r| name.eq_ignore_ascii_case(r))
            {
                Some(AuthorityConfigError::ReservedHeader { name: name.clone() })
            } else {
                None
            };
            if let Some(e) = name_error {
                return Err(e);
            }
            headers.push((name.clone(), value.clone()));
        }
        headers.push((
            String::from("content-type"),
            String::from("application/json"),
        ));
        Ok(HttpAuthority {
            apply_url: cfg.apply_url.clone(),
            claim_url: cfg.claim_url.clone(),
            lmids_url: cfg.lmids_url.clone(),
            headers,
            timeout: DEFAULT_TIMEOUT,
            pool: Arc::default(),
        })
    }

    /// Keeps connections alive in `pool` (a box shares one between its rooms' clients)
    /// instead of a pool of its own.
    pub fn with_pool(mut self, pool: Arc<http::Pool>) -> HttpAuthority {
        self.pool = pool;
        self
    }

    /// Replace the per-request timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> HttpAuthority {
        self.timeout = timeout;
        self
    }

    /// The per-request timeout (connect + send + receive).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Claim (bump) the placement epoch for `doc`: `POST {doc}` → `{epoch}`.
    pub async fn claim_epoch(&self, doc: &str) -> Result<u64, AuthorityError> {
        let url = &self.claim_url;
        let (status, text) = self.post(url, &claim_body(doc)).await?;
        claim_reply(url, status, &text)
    }

    /// The authority's durable lmid per client: `POST {doc, clients}` →
    /// `{lmids: {clientID: n}}`, unwrapped. Clients the authority omits are absent from
    /// the map (treat as 0 = none).
    pub async fn lmids(
        &self,
        doc: &str,
        clients: &[String],
    ) -> Result<BTreeMap<String, u64>, AuthorityError> {
        let url = &self.lmids_url;
        let (status, text) = self.post(url, &lmids_body(doc, clients)).await?;
        lmids_reply(url, status, &text)
    }

    /// Apply one flush batch. `body` is the exact journaled `/apply-row-change-txn` body
    /// string and is sent verbatim (never re-serialized).
    pub async fn apply_row_change_txn(&self, body: &str) -> Result<ApplyResult, AuthorityError> {
        let url = &self.apply_url;
        let (status, text) = self.post(url, body).await?;
        apply_reply(url, status, &text)
    }

    /// POSTs `body`: the status and the body text, or a retryable network failure.
    async fn post(&self, url: &str, body: &str) -> Result<(u16, String), AuthorityError> {
        let resp = self
            .pool
            .request("POST", url, &self.headers, body.as_bytes(), self.timeout)
            .await
            .map_err(|e| AuthorityError::Retryable(e.to_string()))?;
        Ok((resp.status, resp.body_text()))
    }
}
