//! [`parse_url`]: the `http://` URLs the client accepts, and redacting them for
//! messages.

use std::io;

/// A parsed `http://host[:port]/path` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpUrl {
    /// Host name or IP literal (IPv6 without brackets).
    pub host: String,
    /// Port (80 when absent).
    pub port: u16,
    /// The `Host` header value (`host[:port]` as written, IPv6 bracketed).
    pub authority: String,
    /// The request-target: path plus any query, always starting with `/`; no fragment.
    pub target: String,
}

/// Parse and validate an `http://` URL. `https://` is refused (TLS is out of scope —
/// see the module docs), as are other schemes, user-info, empty hosts, bad ports, and
/// request-targets with spaces, control or non-ASCII characters (percent-encode them).
pub fn parse_url(url: &str) -> io::Result<HttpUrl> {
    let bad = |why: &str| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid URL {}: {why}", redact(url)),
        )
    };
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| bad("expected http://host:port/path"))?;
    if scheme.eq_ignore_ascii_case("https") {
        return Err(bad(
            "https is not supported: TLS is out of scope for the room's HTTP client \
             (it talks to loopback/private-network peers); terminate TLS outside the room",
        ));
    }
    if !scheme.eq_ignore_ascii_case("http") {
        return Err(bad("only http:// URLs are supported"));
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    if authority.contains('@') {
        return Err(bad("user-info in URLs is not supported (use headers)"));
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6
            .split_once(']')
            .ok_or_else(|| bad("unterminated IPv6 literal"))?;
        if h.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(bad("invalid IPv6 literal"));
        }
        let port = match after {
            "" => None,
            p => Some(
                p.strip_prefix(':')
                    .ok_or_else(|| bad("junk after IPv6 literal"))?,
            ),
        };
        (h, port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(bad("empty host"));
    }
    if !authority.starts_with('[')
        && !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b))
    {
        return Err(bad("invalid host"));
    }
    let port = match port {
        None => 80,
        Some(p) => {
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad("invalid port"));
            }
            match p.parse::<u16>() {
                Ok(0) | Err(_) => return Err(bad("port out of range")),
                Ok(n) => n,
            }
        }
    };
    let tail = tail.split_once('#').map_or(tail, |(t, _)| t);
    let target = if tail.starts_with('/') {
        tail.to_owned()
    } else {
        format!("/{tail}")
    };
    if !target.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad(
            "path must be printable ASCII without spaces (percent-encode it)",
        ));
    }
    Ok(HttpUrl {
        host: host.to_owned(),
        port,
        authority: authority.to_owned(),
        target,
    })
}

/// `url` with any user-info replaced by `***`, for messages.
pub(super) fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}://***@{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}
