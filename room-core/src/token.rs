//! Room lease tokens (`rt1`) and the scope-spec fingerprint (docs/protocol.md, lease tokens).
//!
//! `rt1.<b64url(payload JSON)>.<b64url(HMAC-SHA256(secret, "rt1.<payload segment>"))>`,
//! base64url without padding, the secret used as its UTF-8 bytes. Verification runs in
//! a fixed order — shape, payload decode, key id, signature (constant time), version,
//! document, expiry — and every refusal is a [`TokenError`] whose message is the
//! `queryError` text. Time is an argument (`now_ms`); the core reads no clock.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::error::{Error, ErrorCode};
use crate::fingerprint::fnv1a32_utf16_hex;
use crate::json::tree::JsValue;

mod scope_hash;

/// The longest token text accepted; anything larger is `malformed`.
pub const MAX_TOKEN_LEN: usize = 1 << 20;

/// Why a token was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenRefusal {
    /// Not three segments with the `rt1` prefix, undecodable, or a bad payload shape.
    Malformed,
    /// The payload's `kid` is not in the key ring.
    UnknownKey,
    /// The MAC does not verify.
    BadSignature,
    /// `v` is not 1.
    UnsupportedVersion,
    /// `doc` is another room's.
    WrongDocument,
    /// `exp` is not after `now`.
    Expired,
}

impl TokenRefusal {
    /// The terse reason (`"malformed"`, `"unknown key"`, …).
    pub fn reason(self) -> &'static str {
        match self {
            TokenRefusal::Malformed => "malformed",
            TokenRefusal::UnknownKey => "unknown key",
            TokenRefusal::BadSignature => "bad signature",
            TokenRefusal::UnsupportedVersion => "unsupported version",
            TokenRefusal::WrongDocument => "wrong document",
            TokenRefusal::Expired => "expired",
        }
    }
}

/// A refused token; `Display` gives the `lease token refused: <reason>` text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenError(pub TokenRefusal);

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lease token refused: {}", self.0.reason())
    }
}

impl From<TokenError> for Error {
    fn from(e: TokenError) -> Error {
        Error::new(ErrorCode::TokenRefused, alloc::format!("{e}"))
    }
}

/// A verified token's payload.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenPayload {
    /// The document the token authorizes.
    pub doc: String,
    /// The approved wire AST.
    pub ast: JsValue,
    /// The subject (user id).
    pub sub: String,
    /// Issued-at, ms since the Unix epoch.
    pub iat: f64,
    /// Expiry, ms since the Unix epoch.
    pub exp: f64,
    /// The signing key id.
    pub kid: String,
    /// The advisory scope fingerprint, when stamped.
    pub scopes_hash: Option<String>,
    /// The whole decoded payload object, as sent.
    pub raw: JsValue,
}

/// What to sign.
#[derive(Clone, Debug)]
pub struct MintOptions<'a> {
    /// The document id.
    pub doc: &'a str,
    /// The approved AST (`None`: the payload has no `ast` member, as `JSON.stringify`
    /// drops an undefined one).
    pub ast: Option<&'a JsValue>,
    /// The subject.
    pub sub: &'a str,
    /// The key id.
    pub kid: &'a str,
    /// The key's secret (used as UTF-8 bytes).
    pub key: &'a str,
    /// Lifetime in ms from `now_ms`.
    pub ttl_ms: f64,
    /// Mint time, ms since the Unix epoch.
    pub now_ms: f64,
    /// The scope fingerprint to stamp, if any.
    pub scopes_hash: Option<&'a str>,
}

type HmacSha256 = Hmac<Sha256>;

fn mac_for(key: &str, message: &[u8]) -> HmacSha256 {
    // HMAC accepts keys of any length; `new_from_slice` cannot fail for it.
    let mut mac = <HmacSha256 as KeyInit>::new_from_slice(key.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(message);
    mac
}

/// Signs a token.
pub fn mint(opts: &MintOptions<'_>) -> Result<String, Error> {
    if !opts.now_ms.is_finite() || !opts.ttl_ms.is_finite() {
        return Err(Error::new(
            ErrorCode::InvalidArgument,
            "now and ttlMs must be finite numbers",
        ));
    }
    let mut members = alloc::vec![
        (String::from("v"), JsValue::Num(1.0)),
        (String::from("doc"), JsValue::Str(String::from(opts.doc))),
    ];
    if let Some(ast) = opts.ast {
        members.push((String::from("ast"), ast.clone()));
    }
    members.extend([
        (String::from("sub"), JsValue::Str(String::from(opts.sub))),
        (String::from("iat"), JsValue::Num(opts.now_ms)),
        (String::from("exp"), JsValue::Num(opts.now_ms + opts.ttl_ms)),
        (String::from("kid"), JsValue::Str(String::from(opts.kid))),
    ]);
    if let Some(h) = opts.scopes_hash {
        members.push((String::from("scopesHash"), JsValue::Str(String::from(h))));
    }
    let payload = JsValue::Obj(members).to_js_string();
    let mut token = String::from("rt1.");
    b64url_encode(payload.as_bytes(), &mut token);
    let sig = mac_for(opts.key, token.as_bytes()).finalize().into_bytes();
    token.push('.');
    b64url_encode(&sig, &mut token);
    Ok(token)
}

/// Verifies a token against the room's document and key ring at `now_ms`.
pub fn verify(
    token: &str,
    doc: &str,
    keys: &[(String, String)],
    now_ms: f64,
) -> Result<TokenPayload, TokenError> {
    use TokenRefusal::*;
    let refuse = |r| Err(TokenError(r));
    if token.len() > MAX_TOKEN_LEN {
        return refuse(Malformed);
    }
    // Shape: rt1.<payload>.<sig>
    let mut parts = token.split('.');
    let (Some("rt1"), Some(payload_seg), Some(sig_seg), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return refuse(Malformed);
    };
    // Decode the payload far enough to read `kid`.
    let Some(payload_bytes) = b64url_decode(payload_seg) else {
        return refuse(Malformed);
    };
    let Ok(payload_text) = core::str::from_utf8(&payload_bytes) else {
        return refuse(Malformed);
    };
    let Ok(raw) = JsValue::parse(payload_text) else {
        return refuse(Malformed);
    };
    if !matches!(raw, JsValue::Obj(_)) {
        return refuse(Malformed);
    }
    let Some(kid) = raw.get("kid").and_then(JsValue::as_str) else {
        return refuse(Malformed);
    };
    // The key: unknown ids are refused, never "try every key".
    let Some((_, secret)) = keys.iter().find(|(k, _)| k == kid) else {
        return refuse(UnknownKey);
    };
    // The signature, before any claim is trusted.
    let Some(sig) = b64url_decode(sig_seg) else {
        return refuse(Malformed);
    };
    let signed = &token[..4 + payload_seg.len()];
    if mac_for(secret, signed.as_bytes())
        .verify_slice(&sig)
        .is_err()
    {
        return refuse(BadSignature);
    }
    if raw.get("v").and_then(JsValue::as_f64) != Some(1.0) {
        return refuse(UnsupportedVersion);
    }
    let (Some(tok_doc), Some(sub), Some(iat), Some(exp)) = (
        raw.get("doc").and_then(JsValue::as_str),
        raw.get("sub").and_then(JsValue::as_str),
        raw.get("iat").and_then(JsValue::as_f64),
        raw.get("exp").and_then(JsValue::as_f64),
    ) else {
        return refuse(Malformed);
    };
    let scopes_hash = match raw.get("scopesHash") {
        None => None,
        Some(JsValue::Str(s)) => Some(s.clone()),
        Some(_) => return refuse(Malformed),
    };
    if tok_doc != doc {
        return refuse(WrongDocument);
    }
    // Refuse at `exp <= now`, the same boundary the shell's sweep uses.
    if exp <= now_ms || now_ms.is_nan() {
        return refuse(Expired);
    }
    Ok(TokenPayload {
        doc: String::from(tok_doc),
        ast: raw.get("ast").cloned().unwrap_or(JsValue::Null),
        sub: String::from(sub),
        iat,
        exp,
        kid: String::from(kid),
        scopes_hash,
        raw,
    })
}

/// `scopeSpecsHash(specs)`: FNV-1a-32 over the UTF-16 code units of the specs' JCS form
/// (object keys sorted by UTF-16 code units, numbers and strings as `JSON.stringify`
/// prints them), 8 lowercase hex characters — the value the JavaScript API server
/// stamps into lease tokens, for every input including non-ASCII text.
pub fn scope_specs_hash(specs: &JsValue) -> String {
    fnv1a32_utf16_hex(&specs.to_jcs_string())
}

/// `scopeSpecsHash` from JSON text, read as `JSON.parse` reads it: an unpaired
/// surrogate escape (`"\ud800"`) is hashed as JavaScript hashes it, a number past the
/// double range counts as `Infinity` (written `null`). Text that is not JSON, or nests
/// arrays and objects deeper than 256 levels, is refused as malformed.
pub fn scope_specs_hash_json(specs_json: &str) -> Result<String, Error> {
    scope_hash::hash_json_text(specs_json)
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Appends base64url without padding.
pub fn b64url_encode(bytes: &[u8], out: &mut String) {
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
}

/// Decodes base64url; trailing `=` padding is tolerated. `None` on any other byte.
pub fn b64url_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // A lone trailing sextet cannot encode a byte.
    if bits >= 6 {
        return None;
    }
    Some(out)
}

/// Constant-time equality of two byte strings (length is not secret).
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b) {
        diff |= x ^ y;
    }
    diff == 0
}

#[cfg(test)]
mod tests;
