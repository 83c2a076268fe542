//! The frames the host reads, decoded once into typed values: a client's downstream
//! frames ([`ClientFrame`]) and the daemon's upstream frames ([`UpstreamFrame`]). The
//! legs branch on these types, never on a frame's `"t"` string.
//!
//! What the host writes lives in [`frames`](super::frames).

use alloc::string::String;

use crate::contract::parse_upstream_frame;
pub(crate) use crate::contract::UpstreamFrame;
use crate::json::tree::JsValue;
use crate::json::write::write_f64;
use crate::Room;

/// The upstream subscription's queryId.
pub(crate) const UPSTREAM_QID: f64 = 1.0;

/// A queryId as the text JavaScript's `String(n)` gives (subscription keys, map keys).
pub(crate) fn qid_key(qid: f64) -> String {
    let mut s = String::new();
    write_f64(&mut s, qid);
    s
}

/// Why a client frame was not decoded (the host ignores it, as the published room's
/// Node shell does, and logs why at debug level).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Undecoded {
    /// Not JSON; the frame's length in bytes.
    NotJson(usize),
    /// JSON, but not an object.
    NotObject,
}

/// One downstream client frame.
#[derive(Clone, Debug)]
pub(crate) enum ClientFrame {
    /// `init`: the connection's clientID (`None` when it is not a string).
    Init {
        /// `clientID`, when a string.
        client_id: Option<String>,
    },
    /// `subscribe` with a numeric `queryId`.
    Subscribe(Subscribe),
    /// `subscribe` without a numeric `queryId` (ignored).
    SubscribeWithoutQid,
    /// `unsubscribe` with a numeric `queryId`.
    Unsubscribe {
        /// The queryId.
        qid: f64,
    },
    /// `unsubscribe` without a numeric `queryId` (ignored).
    UnsubscribeWithoutQid,
    /// `pushMutation`: its envelope, or `None` when the envelope is malformed.
    PushMutation(Option<Envelope>),
    /// `mutate` (raw CRUD, refused): the frame's `queryId` member as sent.
    Mutate {
        /// `queryId`, any JSON value, echoed in the error frame.
        query_id: Option<JsValue>,
    },
    /// A string `"t"` the room does not know.
    Unknown(String),
    /// No string `"t"`.
    Untyped,
}

/// A `subscribe` frame.
#[derive(Clone, Debug)]
pub(crate) struct Subscribe {
    /// `queryId`.
    pub qid: f64,
    /// `name`, when a string: a named system query (the lmid query) instead of a lease.
    pub name: Option<String>,
    /// `leaseToken`, when a string.
    pub lease_token: Option<String>,
}

impl Subscribe {
    /// The `queryId` member as a JSON value (what an `error` frame echoes).
    pub(crate) fn query_id(&self) -> JsValue {
        JsValue::Num(self.qid)
    }
}

/// A validated `pushMutation` envelope.
#[derive(Clone, Debug)]
pub(crate) struct Envelope {
    pub client_id: String,
    pub mid: f64,
    pub name: String,
    pub args: Option<JsValue>,
}

impl Envelope {
    /// `clientID` a string, `mid` a finite number, `name` a string — else `None`.
    fn from_frame(msg: &JsValue) -> Option<Envelope> {
        let e = msg.get("envelope")?;
        let (Some(JsValue::Str(client_id)), Some(JsValue::Num(mid)), Some(JsValue::Str(name))) =
            (e.get("clientID"), e.get("mid"), e.get("name"))
        else {
            return None;
        };
        if !mid.is_finite() {
            return None;
        }
        Some(Envelope {
            client_id: client_id.clone(),
            mid: *mid,
            name: name.clone(),
            args: e.get("args").cloned(),
        })
    }
}

/// A client frame waiting for its clientID's durable lmid (see `newcomer.rs`).
#[derive(Clone, Debug)]
pub(crate) enum Waiting {
    /// The lmid system subscribe.
    Subscribe(Subscribe),
    /// A `pushMutation`.
    Mutation(Envelope),
}

impl ClientFrame {
    /// Decodes one downstream text frame.
    pub(crate) fn decode(text: &str) -> Result<ClientFrame, Undecoded> {
        let Ok(msg) = JsValue::parse(text) else {
            return Err(Undecoded::NotJson(text.len()));
        };
        if !matches!(msg, JsValue::Obj(_)) {
            return Err(Undecoded::NotObject);
        }
        let qid = match msg.get("queryId") {
            Some(JsValue::Num(q)) => Some(*q),
            _ => None,
        };
        let string = |name: &str| match msg.get(name) {
            Some(JsValue::Str(s)) => Some(s.clone()),
            _ => None,
        };
        Ok(match msg.get("t") {
            Some(JsValue::Str(t)) => match t.as_str() {
                "init" => ClientFrame::Init {
                    client_id: string("clientID"),
                },
                "subscribe" => match qid {
                    Some(qid) => ClientFrame::Subscribe(Subscribe {
                        qid,
                        name: string("name"),
                        lease_token: string("leaseToken"),
                    }),
                    None => ClientFrame::SubscribeWithoutQid,
                },
                "unsubscribe" => match qid {
                    Some(qid) => ClientFrame::Unsubscribe { qid },
                    None => ClientFrame::UnsubscribeWithoutQid,
                },
                "pushMutation" => ClientFrame::PushMutation(Envelope::from_frame(&msg)),
                "mutate" => ClientFrame::Mutate {
                    query_id: msg.get("queryId").cloned(),
                },
                _ => ClientFrame::Unknown(t.clone()),
            },
            _ => ClientFrame::Untyped,
        })
    }
}

/// Why an upstream frame was refused before it was read (a violation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UpstreamGarbage {
    /// Not JSON.
    NotJson,
    /// JSON, but not an object.
    NotObject,
}

impl UpstreamGarbage {
    /// The violation's text.
    pub(crate) fn message(self) -> &'static str {
        match self {
            UpstreamGarbage::NotJson => "upstream frame is not JSON",
            UpstreamGarbage::NotObject => "upstream frame is not a JSON object",
        }
    }
}

/// Decodes one upstream frame of the room's subscription (`Ok(None)`: another
/// queryId's). A batch's table names are shared with `room` when given.
pub(crate) fn decode_upstream(
    text: &str,
    room: Option<&Room>,
) -> Result<Option<UpstreamFrame>, UpstreamGarbage> {
    parse_upstream_frame(text, UPSTREAM_QID, room).map_err(|_| {
        if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() {
            UpstreamGarbage::NotObject
        } else {
            UpstreamGarbage::NotJson
        }
    })
}
