//! Upstream frames as the daemon sends them (protocol.md Appendix A): one parse of the
//! whole ws text, so a host does not decode a batch twice.

use alloc::borrow::Cow;
use alloc::format;
use alloc::string::String;

use serde::Deserialize;

use crate::error::Error;
use crate::room::{Room, UpstreamBatch};
use crate::schema::Hello;

use super::{batch_from_wire, diagnose_batch, WireBatch};

/// One upstream frame.
#[derive(Debug)]
pub enum UpstreamFrame {
    /// `nhello`: open a new room from `hello`.
    Hello {
        /// The validated hello, or why it was refused.
        hello: Result<Hello, Error>,
        /// The daemon's boot id.
        boot_id: Option<String>,
    },
    /// `nbatch`: apply `batch` (or the reason it could not be read).
    Batch(Result<UpstreamBatch, Error>),
    /// `progress`: the daemon's release point.
    Progress {
        /// `frame.cvMin`, when a number.
        cv_min: Option<f64>,
    },
    /// `queryError`: the lease died.
    QueryError {
        /// The message (`"undefined"` when absent).
        message: String,
    },
    /// Any other `t` (ignored by rooms).
    Other,
}

#[derive(Deserialize)]
struct WireProgress {
    #[serde(rename = "cvMin", default)]
    cv_min: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct WireFrame<'a> {
    #[serde(borrow, default)]
    t: Option<Cow<'a, str>>,
    #[serde(rename = "queryId", default)]
    query_id: Option<serde_json::Value>,
    #[serde(default)]
    hello: Option<serde_json::Value>,
    #[serde(rename = "bootId", default)]
    boot_id: Option<serde_json::Value>,
    #[serde(borrow, default)]
    batch: Option<WireBatch<'a>>,
    #[serde(default)]
    frame: Option<WireProgress>,
    #[serde(default)]
    message: Option<serde_json::Value>,
}

/// Parses one upstream ws text frame. `Ok(None)` when the frame is for another
/// `queryId` than `query_id` (rooms ignore those); an `Err` when the text is not a JSON
/// object (a violation). Batch table names are shared with `room` when given.
pub fn parse_upstream_frame(
    text: &str,
    query_id: f64,
    room: Option<&Room>,
) -> Result<Option<UpstreamFrame>, Error> {
    let wire: WireFrame<'_> = match serde_json::from_str(text) {
        Ok(w) => w,
        Err(e) => return slow_path(text, query_id, &e),
    };
    match &wire.query_id {
        None => {}
        Some(serde_json::Value::Number(n)) if n.as_f64() == Some(query_id) => {}
        Some(_) => return Ok(None),
    }
    Ok(Some(match wire.t.as_deref() {
        Some("nhello") => UpstreamFrame::Hello {
            hello: match &wire.hello {
                Some(h) => Hello::from_value(h),
                None => Hello::from_value(&serde_json::Value::Null),
            },
            boot_id: match wire.boot_id {
                Some(serde_json::Value::String(s)) => Some(s),
                _ => None,
            },
        },
        Some("nbatch") => UpstreamFrame::Batch(match wire.batch {
            None => Err(Error::malformed(
                "malformed upstream batch: the frame has no `batch`",
            )),
            Some(b) => batch_of(b, room),
        }),
        Some("progress") => UpstreamFrame::Progress {
            cv_min: wire.frame.and_then(|f| f.cv_min).and_then(|v| v.as_f64()),
        },
        Some("queryError") => UpstreamFrame::QueryError {
            message: match wire.message {
                Some(serde_json::Value::String(s)) => s,
                Some(other) => format!("{other}"),
                None => String::from("undefined"),
            },
        },
        _ => UpstreamFrame::Other,
    }))
}

fn batch_of(wire: WireBatch<'_>, room: Option<&Room>) -> Result<UpstreamBatch, Error> {
    let intern = |name: &str| match room.and_then(|r| r.table_name(name)) {
        Some(shared) => shared,
        None => alloc::sync::Arc::from(name),
    };
    batch_from_wire(wire, &intern, true)
}

/// The frame did not fit the typed shape: either it is not JSON at all (an error), or a
/// field has the wrong type — most usefully a malformed batch, reported as such.
fn slow_path(
    text: &str,
    query_id: f64,
    err: &serde_json::Error,
) -> Result<Option<UpstreamFrame>, Error> {
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| Error::malformed(format!("upstream frame is not JSON: {e}")))?;
    let Some(o) = v.as_object() else {
        return Err(Error::malformed("upstream frame is not a JSON object"));
    };
    match o.get("queryId") {
        None => {}
        Some(serde_json::Value::Number(n)) if n.as_f64() == Some(query_id) => {}
        Some(_) => return Ok(None),
    }
    if o.get("t").and_then(serde_json::Value::as_str) == Some("nbatch") {
        let batch_text = o.get("batch").map(|b| format!("{b}")).unwrap_or_default();
        return Ok(Some(UpstreamFrame::Batch(Err(Error::malformed(format!(
            "malformed upstream batch: {}",
            diagnose_batch(&batch_text, err)
        ))))));
    }
    Err(Error::malformed(format!(
        "upstream frame has a field of the wrong type: {err}"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HELLO: &str = r#"{"t":"nhello","queryId":1,"bootId":"b-1","hello":{"epoch":1,"comparatorVersion":2,"tables":[{"name":"note","columns":["id","body"],"primaryKey":[0]}],"normalizedFp":"d0ffe1b66912a02b"}}"#;

    #[test]
    fn frames_parse_once() {
        match parse_upstream_frame(HELLO, 1.0, None).unwrap().unwrap() {
            UpstreamFrame::Hello { hello, boot_id } => {
                assert!(hello.is_ok(), "{hello:?}");
                assert_eq!(boot_id.as_deref(), Some("b-1"));
            }
            other => panic!("{other:?}"),
        }
        let batch = r#"{"t":"nbatch","queryId":1,"batch":{"epoch":1,"seq":0,"normalizedFp":"d0ffe1b66912a02b","ops":[{"table":"note","op":"add","row":[1,"a"]}],"cv":3}}"#;
        match parse_upstream_frame(batch, 1.0, None).unwrap().unwrap() {
            UpstreamFrame::Batch(Ok(b)) => assert_eq!(b.ops.len(), 1),
            other => panic!("{other:?}"),
        }
        let bad = r#"{"t":"nbatch","queryId":1,"batch":{"epoch":"1","seq":0}}"#;
        match parse_upstream_frame(bad, 1.0, None).unwrap().unwrap() {
            UpstreamFrame::Batch(Err(e)) => assert!(e.message().contains("epoch"), "{e}"),
            other => panic!("{other:?}"),
        }
        let progress = r#"{"t":"progress","frame":{"cvMin":9}}"#;
        assert!(matches!(
            parse_upstream_frame(progress, 1.0, None).unwrap().unwrap(),
            UpstreamFrame::Progress { cv_min: Some(c) } if c == 9.0
        ));
        let other_q = r#"{"t":"nbatch","queryId":2,"batch":7}"#;
        assert!(parse_upstream_frame(other_q, 1.0, None).unwrap().is_none());
        assert!(parse_upstream_frame("nope", 1.0, None).is_err());
        assert!(parse_upstream_frame("[1]", 1.0, None).is_err());
    }
}
