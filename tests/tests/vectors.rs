//! The upstream test vectors (`tests/vectors/`): the COMPARATOR_VERSION 2 sort order and
//! the flat `schemaFp` fingerprints (a cross-check of the FNV-1a primitives that
//! `normalizedFp` is built from).

use std::cmp::Ordering;
use std::path::PathBuf;

use rindle_room_core::fingerprint::Fnv64;
use rindle_room_core::value::{compare, Value};
use serde_json::Value as Json;

fn vectors(name: &str) -> Json {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("vectors")
        .join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name} is not JSON: {e}"))
}

/// A vector operand: `{"bits": "0x…"}` is a raw double (NaN, ±0 and ±∞ survive), `null`
/// is NULL, strings and booleans are themselves.
fn operand(v: &Json) -> Value {
    match v {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::String(s) => Value::str(s),
        Json::Object(o) => {
            let hex = o["bits"].as_str().expect("bits is a string");
            let bits = u64::from_str_radix(hex.trim_start_matches("0x"), 16).expect("hex bits");
            // The raw double, not `Value::num`: the vectors pin -0 < +0.
            Value::Num(f64::from_bits(bits))
        }
        other => panic!("unexpected operand {other}"),
    }
}

#[test]
fn every_comparator_vector_passes() {
    let all = vectors("compare-vectors.json");
    let all = all.as_array().expect("an array");
    assert_eq!(all.len(), 18, "the upstream file holds 18 vectors");
    for v in all {
        let (a, b) = (operand(&v["a"]), operand(&v["b"]));
        let want = match v["expected"].as_i64() {
            Some(-1) => Ordering::Less,
            Some(0) => Ordering::Equal,
            Some(1) => Ordering::Greater,
            other => panic!("bad expectation {other:?}"),
        };
        assert_eq!(compare(&a, &b), want, "{v}");
        assert_eq!(compare(&b, &a), want.reverse(), "{v} (swapped)");
    }
}

/// The flat `schemaFp` of one level.
fn level(f: &mut Fnv64, ws: &Json) {
    let cols: Vec<&str> = ws["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    f.byte(0x53);
    f.u32(cols.len() as u32);
    for c in &cols {
        f.text(c);
    }
    let pk = ws["primaryKey"].as_array().unwrap();
    f.u32(pk.len() as u32);
    for i in pk {
        f.text(cols[i.as_u64().unwrap() as usize]);
    }
    let sort = ws["sort"].as_array().unwrap();
    f.u32(sort.len() as u32);
    for s in sort {
        f.text(cols[s[0].as_u64().unwrap() as usize]);
        f.byte(u8::from(s[1].as_bool().unwrap()));
    }
    f.byte(u8::from(ws["singular"].as_bool().unwrap()));
    let rels = ws["relationships"].as_array().unwrap();
    f.u32(rels.len() as u32);
    for r in rels {
        f.text(r["name"].as_str().unwrap());
        match r.get("child").filter(|c| !c.is_null()) {
            None => f.byte(0),
            Some(child) => {
                f.byte(1);
                level(f, child);
                match r.get("project").filter(|p| !p.is_null()) {
                    None => f.byte(0),
                    Some(p) => {
                        f.byte(1);
                        let ccols = child["columns"].as_array().unwrap();
                        f.text(ccols[p["col"].as_u64().unwrap() as usize].as_str().unwrap());
                    }
                }
            }
        }
    }
}

#[test]
fn every_schema_fp_vector_passes() {
    let all = vectors("schema-fp-vectors.json");
    let all = all.as_array().expect("an array");
    assert_eq!(all.len(), 5, "the upstream file holds 5 vectors");
    for v in all {
        let mut f = Fnv64::new();
        level(&mut f, &v["schema"]);
        assert_eq!(f.hex(), v["fp"].as_str().unwrap(), "{}", v["schema"]);
    }
}
