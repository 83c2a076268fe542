//! The text of every frame the server sends, built with the core's JSON writers so
//! numbers and strings print exactly as `JSON.stringify` prints them (docs/protocol.md,
//! "Numbers"), and members in the order the published room's Node shell writes them.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::contract::write_ops;
use crate::json::tree::JsValue;
use crate::json::write::{write_f64, write_i64, write_str};
use crate::value::COMPARATOR_VERSION;
use crate::{Batch, DownstreamHello, NetOp};

/// A recorded non-applied verdict: what a `mutationOutcome` frame says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedOutcome {
    /// `"rejected"` or `"deopt"`.
    pub kind: &'static str,
    /// Why (absent on outcomes re-seeded from journal replay of a non-applied entry).
    pub reason: Option<String>,
    /// The mutator name (deopt only).
    pub name: Option<String>,
    /// The envelope's args as JSON text (deopt only; absent args stay absent).
    pub args: Option<String>,
}

/// Appends a queryId (a JavaScript number) as JSON.
pub fn write_qid(out: &mut String, qid: f64) {
    write_f64(out, qid);
}

/// `{"t":"nhello","queryId":Q,"hello":{…},"bootId":"…"}`.
pub fn nhello(qid: f64, hello: &DownstreamHello, boot_id: &str) -> String {
    let mut s = String::with_capacity(256);
    s.push_str("{\"t\":\"nhello\",\"queryId\":");
    write_qid(&mut s, qid);
    s.push_str(",\"hello\":{\"epoch\":");
    write_i64(&mut s, hello.epoch as i64);
    s.push_str(",\"comparatorVersion\":");
    write_i64(&mut s, i64::from(COMPARATOR_VERSION));
    s.push_str(",\"tables\":[");
    for (i, t) in hello.tables.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        t.write_json(&mut s);
    }
    s.push_str("],\"normalizedFp\":");
    write_str(&mut s, &hello.normalized_fp);
    s.push_str("},\"bootId\":");
    write_str(&mut s, boot_id);
    s.push('}');
    s
}

/// `{"t":"nbatch","queryId":Q,"batch":{"epoch","seq","normalizedFp","ops","cv"}}`, with
/// the op list already rendered.
pub fn nbatch_with_ops(qid: f64, batch: &Batch, ops_json: &str) -> String {
    let mut s = String::with_capacity(96 + batch.normalized_fp.len() + ops_json.len());
    s.push_str("{\"t\":\"nbatch\",\"queryId\":");
    write_qid(&mut s, qid);
    s.push_str(",\"batch\":{\"epoch\":");
    write_i64(&mut s, batch.epoch as i64);
    s.push_str(",\"seq\":");
    write_i64(&mut s, batch.seq as i64);
    s.push_str(",\"normalizedFp\":");
    write_str(&mut s, &batch.normalized_fp);
    s.push_str(",\"ops\":");
    s.push_str(ops_json);
    s.push_str(",\"cv\":");
    write_i64(&mut s, batch.cv as i64);
    s.push_str("}}");
    s
}

/// An `nbatch` frame, rendering its ops.
pub fn nbatch(qid: f64, batch: &Batch) -> String {
    let mut ops = String::new();
    write_ops(&mut ops, &batch.ops);
    nbatch_with_ops(qid, batch, &ops)
}

/// Renders op lists once per drain: subscribers sharing a pipeline share one op list
/// (the same `Arc`), so its text is built once and copied.
#[derive(Debug, Default)]
pub struct OpsCache {
    rendered: Vec<(Arc<[NetOp]>, String)>,
}

impl OpsCache {
    /// The JSON text of `ops`.
    pub fn get(&mut self, ops: &Arc<[NetOp]>) -> &str {
        let i = match self.rendered.iter().position(|(k, _)| Arc::ptr_eq(k, ops)) {
            Some(i) => i,
            None => {
                let mut s = String::new();
                write_ops(&mut s, ops);
                self.rendered.push((ops.clone(), s));
                self.rendered.len() - 1
            }
        };
        &self.rendered[i].1
    }
}

/// `{"t":"progress","frame":{"cvMin":N,"upstreamCv"?:X,"upstreamBoot"?:"…"}}`.
pub fn progress(cv_min: i64, upstream_cv: Option<f64>, upstream_boot: Option<&str>) -> String {
    // Sized once: the frame goes out after every drain of every writer's commit.
    let mut s = String::with_capacity(96 + upstream_boot.map_or(0, str::len));
    s.push_str("{\"t\":\"progress\",\"frame\":{\"cvMin\":");
    write_i64(&mut s, cv_min);
    if let Some(cv) = upstream_cv {
        s.push_str(",\"upstreamCv\":");
        write_f64(&mut s, cv);
        if let Some(boot) = upstream_boot {
            s.push_str(",\"upstreamBoot\":");
            write_str(&mut s, boot);
        }
    }
    s.push_str("}}");
    s
}

/// `{"t":"queryError","queryId":Q,"message":"…"}`.
pub fn query_error(qid: f64, message: &str) -> String {
    let mut s = String::from("{\"t\":\"queryError\",\"queryId\":");
    write_qid(&mut s, qid);
    s.push_str(",\"message\":");
    write_str(&mut s, message);
    s.push('}');
    s
}

/// `{"t":"error","queryId"?:…,"message":"…"}`: `query_id` echoes the client frame's
/// `queryId` member as sent (absent stays absent, as `JSON.stringify` drops `undefined`).
pub fn error(query_id: Option<&JsValue>, message: &str) -> String {
    let mut s = String::from("{\"t\":\"error\"");
    if let Some(q) = query_id {
        s.push_str(",\"queryId\":");
        q.write_js(&mut s);
    }
    s.push_str(",\"message\":");
    write_str(&mut s, message);
    s.push('}');
    s
}

/// `{"t":"mutationOutcome","mid":M,"kind":"…","reason"?:"…","name"?:"…","args"?:…}`.
pub fn mutation_outcome(mid: u64, o: &RecordedOutcome) -> String {
    let mut s = String::from("{\"t\":\"mutationOutcome\",\"mid\":");
    write_i64(&mut s, mid as i64);
    s.push_str(",\"kind\":");
    write_str(&mut s, o.kind);
    if let Some(r) = &o.reason {
        s.push_str(",\"reason\":");
        write_str(&mut s, r);
    }
    if o.kind == "deopt" {
        if let Some(n) = &o.name {
            s.push_str(",\"name\":");
            write_str(&mut s, n);
        }
        if let Some(a) = &o.args {
            s.push_str(",\"args\":");
            s.push_str(a);
        }
    }
    s.push('}');
    s
}

/// Upstream `{"t":"init","clientID":"…"}`.
pub fn upstream_init(client_id: &str) -> String {
    let mut s = String::from("{\"t\":\"init\",\"clientID\":");
    write_str(&mut s, client_id);
    s.push('}');
    s
}

/// Upstream `{"t":"subscribe","queryId":1,"leaseToken":"…"}`.
pub fn upstream_subscribe(query_id: u64, lease_token: &str) -> String {
    let mut s = String::from("{\"t\":\"subscribe\",\"queryId\":");
    write_i64(&mut s, query_id as i64);
    s.push_str(",\"leaseToken\":");
    write_str(&mut s, lease_token);
    s.push('}');
    s
}

/// The `queryError` / `error` text of a clientID used by another subject.
pub(crate) fn bound_elsewhere(client: &str) -> String {
    alloc::format!(
        "clientID `{client}` is bound to another subject: a clientID belongs to the subject \
         of the first lease presented with it"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn progress_members_follow_the_seed() {
        assert_eq!(
            progress(7, None, Some("b")),
            r#"{"t":"progress","frame":{"cvMin":7}}"#
        );
        assert_eq!(
            progress(7, Some(42.0), Some("b-1")),
            r#"{"t":"progress","frame":{"cvMin":7,"upstreamCv":42,"upstreamBoot":"b-1"}}"#
        );
    }

    #[test]
    fn outcome_frames_echo_name_and_args_only_on_deopt() {
        let rejected = RecordedOutcome {
            kind: "rejected",
            reason: Some("unknown mutator `x`".to_string()),
            name: Some("x".to_string()),
            args: Some("{}".to_string()),
        };
        assert_eq!(
            mutation_outcome(3, &rejected),
            r#"{"t":"mutationOutcome","mid":3,"kind":"rejected","reason":"unknown mutator `x`"}"#
        );
        let deopt = RecordedOutcome {
            kind: "deopt",
            reason: Some("environment".to_string()),
            ..rejected
        };
        assert_eq!(
            mutation_outcome(4, &deopt),
            r#"{"t":"mutationOutcome","mid":4,"kind":"deopt","reason":"environment","name":"x","args":{}}"#
        );
    }

    #[test]
    fn error_frames_echo_the_query_id_as_sent() {
        assert_eq!(error(None, "m"), r#"{"t":"error","message":"m"}"#);
        let q = JsValue::Str("q".to_string());
        assert_eq!(
            error(Some(&q), "m"),
            r#"{"t":"error","queryId":"q","message":"m"}"#
        );
        assert_eq!(
            query_error(1.5, "x"),
            r#"{"t":"queryError","queryId":1.5,"message":"x"}"#
        );
    }
}
