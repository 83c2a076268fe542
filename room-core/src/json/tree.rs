//! An order-preserving JSON value with JavaScript semantics.
//!
//! [`JsValue`] parses like `JSON.parse` (numbers become doubles, object keys keep their
//! first-seen position, a repeated key keeps its last value) and prints like
//! `JSON.stringify` ([`JsValue::write_js`]) or canonically per RFC 8785 / JCS
//! ([`JsValue::write_jcs`]: object keys sorted by UTF-16 code units, no whitespace,
//! numbers and strings exactly as ECMAScript prints them). Tokens embed the AST as the
//! JavaScript minter would, and `batchHash` / `scopeSpecsHash` hash the JCS text.

use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;
use core::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use super::write::{write_f64, write_str};

/// A JSON value as JavaScript holds it.
#[derive(Clone, Debug, PartialEq)]
pub enum JsValue {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A number (a double, as in JavaScript).
    Num(f64),
    /// A string.
    Str(String),
    /// An array.
    Arr(Vec<JsValue>),
    /// An object, keys in insertion order.
    Obj(Vec<(String, JsValue)>),
}

impl JsValue {
    /// Parses JSON text.
    pub fn parse(text: &str) -> Result<JsValue, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Converts a `serde_json` value (its object key order is whatever serde_json kept).
    pub fn from_serde(v: &serde_json::Value) -> JsValue {
        match v {
            serde_json::Value::Null => JsValue::Null,
            serde_json::Value::Bool(b) => JsValue::Bool(*b),
            serde_json::Value::Number(n) => JsValue::Num(n.as_f64().unwrap_or(f64::NAN)),
            serde_json::Value::String(s) => JsValue::Str(s.clone()),
            serde_json::Value::Array(a) => {
                JsValue::Arr(a.iter().map(JsValue::from_serde).collect())
            }
            serde_json::Value::Object(o) => JsValue::Obj(
                o.iter()
                    .map(|(k, v)| (k.clone(), JsValue::from_serde(v)))
                    .collect(),
            ),
        }
    }

    /// A member of an object.
    pub fn get(&self, key: &str) -> Option<&JsValue> {
        match self {
            JsValue::Obj(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            JsValue::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The number, if this is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            JsValue::Num(f) => Some(*f),
            _ => None,
        }
    }

    /// Prints like `JSON.stringify(value)`.
    pub fn write_js(&self, out: &mut String) {
        match self {
            JsValue::Null => out.push_str("null"),
            JsValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            JsValue::Num(f) => write_f64(out, *f),
            JsValue::Str(s) => write_str(out, s),
            JsValue::Arr(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.write_js(out);
                }
                out.push(']');
            }
            JsValue::Obj(members) => {
                out.push('{');
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_str(out, k);
                    out.push(':');
                    v.write_js(out);
                }
                out.push('}');
            }
        }
    }

    /// `JSON.stringify(value)` as a new string.
    pub fn to_js_string(&self) -> String {
        let mut s = String::new();
        self.write_js(&mut s);
        s
    }

    /// Prints the RFC 8785 canonical form.
    pub fn write_jcs(&self, out: &mut String) {
        match self {
            JsValue::Arr(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.write_jcs(out);
                }
                out.push(']');
            }
            JsValue::Obj(members) => {
                let mut sorted: Vec<&(String, JsValue)> = members.iter().collect();
                sorted.sort_by(|a, b| utf16_cmp(&a.0, &b.0));
                out.push('{');
                for (i, (k, v)) in sorted.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_str(out, k);
                    out.push(':');
                    v.write_jcs(out);
                }
                out.push('}');
            }
            scalar => scalar.write_js(out),
        }
    }

    /// The RFC 8785 canonical form as a new string.
    pub fn to_jcs_string(&self) -> String {
        let mut s = String::new();
        self.write_jcs(&mut s);
        s
    }
}

/// Orders strings by UTF-16 code units (JavaScript's default sort; RFC 8785 §3.2.3).
pub fn utf16_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

struct JsVisitor;

impl<'de> Visitor<'de> for JsVisitor {
    type Value = JsValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<JsValue, E> {
        Ok(JsValue::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<JsValue, E> {
        Ok(JsValue::Null)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<JsValue, E> {
        Ok(JsValue::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<JsValue, E> {
        Ok(JsValue::Num(v as f64))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<JsValue, E> {
        Ok(JsValue::Num(v as f64))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<JsValue, E> {
        Ok(JsValue::Num(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<JsValue, E> {
        Ok(JsValue::Str(String::from(v)))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<JsValue, E> {
        Ok(JsValue::Str(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<JsValue, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element::<JsValue>()? {
            items.push(v);
        }
        Ok(JsValue::Arr(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsValue, A::Error> {
        let mut members: Vec<(String, JsValue)> = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, JsValue>()? {
            // JSON.parse: a repeated key keeps its first position and its last value.
            match members.iter_mut().find(|(key, _)| *key == k) {
                Some(slot) => slot.1 = v,
                None => members.push((k, v)),
            }
        }
        Ok(JsValue::Obj(members))
    }
}

impl<'de> Deserialize<'de> for JsValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<JsValue, D::Error> {
        d.deserialize_any(JsVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_like_json_stringify_and_keeps_key_order() {
        let v = JsValue::parse(r#"{ "b": 1.0, "a": [true, null, "x\u0041"], "b": 2e0 }"#).unwrap();
        assert_eq!(v.to_js_string(), r#"{"b":2,"a":[true,null,"xA"]}"#);
    }

    #[test]
    fn jcs_sorts_keys_by_utf16() {
        // RFC 8785 §3.2.3 example ordering: "\u20ac" (€) sorts before "\ud83d\ude00" (😀)
        // in UTF-16, although UTF-8 byte order says the same here; "\r" before "1".
        let v = JsValue::parse(r#"{"😀":1,"€":2,"1":3,"\r":4,"ö":5}"#).unwrap();
        assert_eq!(
            v.to_jcs_string(),
            "{\"\\r\":4,\"1\":3,\"ö\":5,\"€\":2,\"😀\":1}"
        );
        let w = JsValue::parse(r#"{"ﬀ":1,"😀":2}"#).unwrap();
        // UTF-16: U+D83D (high surrogate) < U+FB00.
        assert_eq!(w.to_jcs_string(), "{\"😀\":2,\"ﬀ\":1}");
    }

    #[test]
    fn jcs_numbers() {
        let v = JsValue::parse("[1e21, 1E-7, -0, 0.1, 100, 1.5e300]").unwrap();
        assert_eq!(v.to_jcs_string(), "[1e+21,1e-7,0,0.1,100,1.5e+300]");
    }
}
