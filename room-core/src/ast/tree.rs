//! An AST's JSON as a tree that borrows its text.
//!
//! Parsing an AST into a `serde_json::Value` allocated every key and string and a B-tree
//! node per object, then freed them all once the query was built: about 60 % of what
//! parsing a relational query cost. A [`Tree`] is read by the same parser
//! (`serde_json`, so a malformed text is refused in the same words), but keeps each
//! unescaped string as a slice of the text and each object as a short sorted list.
//!
//! It reads exactly as the `Value` did: numbers are classified the same way (an
//! unsigned integer, a negative one, or a double; a double that is not finite is
//! `null`), an object holds the last value of a repeated key, and its entries iterate
//! in key order.

use alloc::borrow::Cow;
use alloc::vec::Vec;
use core::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

/// One JSON value of an AST.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tree<'a> {
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'a, str>),
    Array(Vec<Tree<'a>>),
    Object(Object<'a>),
}

/// An object: its entries as read. A repeated key means its last value, and the
/// entries iterate in key order, each key once — what a map gives.
#[derive(Debug, Clone, Default)]
pub(crate) struct Object<'a>(Vec<(Cow<'a, str>, Tree<'a>)>);

impl<'a> Object<'a> {
    /// The value under `key` (its last, when the key repeats).
    #[inline]
    pub fn get(&self, key: &str) -> Option<&Tree<'a>> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The entries, in key order, each key once with its last value.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Tree<'a>)> {
        let mut sorted: Vec<(&str, &Tree<'a>)> = self.0.iter().map(|(k, v)| (&**k, v)).collect();
        // Stable: a repeated key's values stay in reading order, its last value last.
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        let mut out: Vec<(&str, &Tree<'a>)> = Vec::with_capacity(sorted.len());
        for e in sorted {
            match out.last_mut() {
                Some(last) if last.0 == e.0 => *last = e,
                _ => out.push(e),
            }
        }
        out.into_iter()
    }

    /// The values, in key order (see [`Object::iter`]).
    pub fn values(&self) -> impl Iterator<Item = &Tree<'a>> {
        self.iter().map(|(_, v)| v)
    }

    /// How many keys.
    pub fn len(&self) -> usize {
        self.iter().count()
    }
}

impl PartialEq for Object<'_> {
    /// Equal when they hold the same keys and values, as maps.
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl<'a> Tree<'a> {
    /// The tree of a parsed `Value`, borrowing its strings.
    pub fn of_value(v: &'a Value) -> Tree<'a> {
        match v {
            Value::Null => Tree::Null,
            Value::Bool(b) => Tree::Bool(*b),
            Value::Number(n) => Tree::Number(n.clone()),
            Value::String(s) => Tree::String(Cow::Borrowed(s)),
            Value::Array(items) => Tree::Array(items.iter().map(Tree::of_value).collect()),
            // A map's entries are in key order already, each key once.
            Value::Object(o) => Tree::Object(Object(
                o.iter()
                    .map(|(k, v)| (Cow::Borrowed(k.as_str()), Tree::of_value(v)))
                    .collect(),
            )),
        }
    }

    /// The value under `key`, when this is an object.
    #[inline]
    pub fn get(&self, key: &str) -> Option<&Tree<'a>> {
        self.as_object()?.get(key)
    }

    pub fn as_object(&self) -> Option<&Object<'a>> {
        match self {
            Tree::Object(o) => Some(o),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&Vec<Tree<'a>>> {
        match self {
            Tree::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Tree::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Tree::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Tree::Number(n) => n.as_f64(),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Tree<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Tree<'de>, D::Error> {
        d.deserialize_any(TreeVisitor)
    }
}

struct TreeVisitor;

impl<'de> Visitor<'de> for TreeVisitor {
    type Value = Tree<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Tree<'de>, E> {
        Ok(Tree::Bool(b))
    }

    fn visit_i64<E>(self, i: i64) -> Result<Tree<'de>, E> {
        Ok(Tree::Number(i.into()))
    }

    fn visit_u64<E>(self, u: u64) -> Result<Tree<'de>, E> {
        Ok(Tree::Number(u.into()))
    }

    fn visit_f64<E>(self, f: f64) -> Result<Tree<'de>, E> {
        Ok(Number::from_f64(f).map_or(Tree::Null, Tree::Number))
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Tree<'de>, E> {
        Ok(Tree::String(Cow::Borrowed(s)))
    }

    fn visit_str<E>(self, s: &str) -> Result<Tree<'de>, E> {
        Ok(Tree::String(Cow::Owned(s.into())))
    }

    fn visit_string<E>(self, s: alloc::string::String) -> Result<Tree<'de>, E> {
        Ok(Tree::String(Cow::Owned(s)))
    }

    fn visit_none<E>(self) -> Result<Tree<'de>, E> {
        Ok(Tree::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Tree<'de>, D::Error> {
        Tree::deserialize(d)
    }

    fn visit_unit<E>(self) -> Result<Tree<'de>, E> {
        Ok(Tree::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Tree<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(4).min(64));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Tree::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tree<'de>, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(6).min(64));
        while let Some(key) = map.next_key::<KeyText<'de>>()? {
            entries.push((key.0, map.next_value()?));
        }
        Ok(Tree::Object(Object(entries)))
    }
}

/// An object key, borrowed from the text unless it had escapes.
struct KeyText<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for KeyText<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<KeyText<'de>, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = KeyText<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }

            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<KeyText<'de>, E> {
                Ok(KeyText(Cow::Borrowed(s)))
            }

            fn visit_str<E>(self, s: &str) -> Result<KeyText<'de>, E> {
                Ok(KeyText(Cow::Owned(s.into())))
            }

            fn visit_string<E>(self, s: alloc::string::String) -> Result<KeyText<'de>, E> {
                Ok(KeyText(Cow::Owned(s)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::{String, ToString};
    use alloc::vec;
    use proptest::prelude::*;

    /// What reading `text` as a tree gives, as reading it as a `Value` would give it.
    fn both(text: &str) -> (Result<Tree<'_>, String>, Result<Value, String>) {
        (
            serde_json::from_str::<Tree<'_>>(text).map_err(|e| e.to_string()),
            serde_json::from_str::<Value>(text).map_err(|e| e.to_string()),
        )
    }

    /// Every key of every object of `v` reads the same value through `t.get`.
    fn same_gets(t: &Tree<'_>, v: &Value) -> Result<(), TestCaseError> {
        match (t, v) {
            (Tree::Object(o), Value::Object(m)) => {
                prop_assert_eq!(o.len(), m.len());
                for (k, v) in m {
                    let got = o.get(k);
                    prop_assert_eq!(got, Some(&Tree::of_value(v)), "key {}", k);
                    if let Some(got) = got {
                        same_gets(got, v)?;
                    }
                }
            }
            (Tree::Array(items), Value::Array(values)) => {
                for (t, v) in items.iter().zip(values) {
                    same_gets(t, v)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn same(text: &str) -> Result<(), TestCaseError> {
        match both(text) {
            (Ok(t), Ok(v)) => {
                prop_assert_eq!(&t, &Tree::of_value(&v), "{}", text);
                same_gets(&t, &v)?;
            }
            (Err(a), Err(b)) => prop_assert_eq!(a, b, "{}", text),
            (t, v) => prop_assert!(false, "{text}: tree {t:?}, value {v:?}"),
        }
        Ok(())
    }

    /// JSON texts: values of every kind, numbers written every way, keys repeated,
    /// strings with escapes.
    fn json_text() -> impl Strategy<Value = String> {
        let number = prop_oneof![
            any::<i64>().prop_map(|i| i.to_string()),
            any::<u64>().prop_map(|u| u.to_string()),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| f.to_string()),
            Just(String::from("18446744073709551616")),
            Just(String::from("-9223372036854775809")),
            Just(String::from("1e400")),
            Just(String::from("-0")),
            Just(String::from("1.0")),
            Just(String::from("2E-3")),
        ];
        let string = prop_oneof![
            "[a-z]{0,6}".prop_map(|s| alloc::format!("\"{s}\"")),
            Just(String::from(r#""a\"b""#)),
            Just(String::from(r#""tab\there""#)),
            Just(String::from(r#""\u00e9\ud83d\ude00""#)),
            Just(String::from(r#""\ud800""#)),
        ];
        let leaf = prop_oneof![
            Just(String::from("null")),
            Just(String::from("true")),
            Just(String::from("false")),
            number,
            string.clone(),
        ];
        leaf.prop_recursive(4, 40, 5, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5)
                    .prop_map(|items| alloc::format!("[{}]", items.join(","))),
                // Keys from a small set, so that some repeat.
                prop::collection::vec(
                    (
                        prop_oneof![
                            Just("\"a\""),
                            Just("\"b\""),
                            Just("\"c\""),
                            Just("\"a\\u0062\"")
                        ],
                        inner
                    ),
                    0..5
                )
                .prop_map(|entries| {
                    let body: Vec<String> = entries
                        .iter()
                        .map(|(k, v)| alloc::format!("{k}:{v}"))
                        .collect();
                    alloc::format!("{{{}}}", body.join(","))
                }),
            ]
        })
    }

    proptest! {
        /// A tree reads every text as a `Value` does: the same values, numbers of the same
        /// kind, the last of a repeated key, entries in key order — and a text a `Value`
        /// refuses is refused in the same words.
        #[test]
        fn a_tree_reads_a_text_as_a_value_does(
            text in json_text(),
            cut in any::<prop::sample::Index>(),
            junk in prop_oneof![Just(""), Just("x"), Just("}"), Just(","), Just(" ")],
        ) {
            same(&text)?;
            // A text cut anywhere (on a character boundary), or with something after it.
            let mut at = cut.index(text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            same(&text[..at])?;
            same(&alloc::format!("{text}{junk}"))?;
        }
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value_and_entries_iterate_in_key_order() {
        let t: Tree<'_> = serde_json::from_str(r#"{"b":1,"a":2,"b":3}"#).unwrap();
        let o = t.as_object().unwrap();
        assert_eq!(o.len(), 2);
        assert_eq!(o.get("b"), Some(&Tree::Number(3.into())));
        let keys: Vec<&str> = o.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, vec!["a", "b"]);
    }

    #[test]
    fn unescaped_strings_are_borrowed_from_the_text() {
        let t: Tree<'_> = serde_json::from_str(r#"{"table":"issue","e":"a\nb"}"#).unwrap();
        assert!(matches!(
            t.get("table"),
            Some(Tree::String(Cow::Borrowed("issue")))
        ));
        assert!(matches!(t.get("e"), Some(Tree::String(Cow::Owned(_)))));
    }
}
