//! The fast batch parser against the general one.

use super::*;
use crate::contract::parse_upstream_batch;
use crate::schema::Hello;
use alloc::format;

const FP: &str = "ade493d332983993";

fn room() -> Room {
    let hello = r#"{"epoch":1,"comparatorVersion":2,"tables":[
        {"name":"k","columns":["x","y","z"],"primaryKey":[2,0]},
        {"name":"t","columns":["id","a","b","c"],"primaryKey":[0]}],"normalizedFp":"ade493d332983993"}"#;
    Room::open(Hello::from_json(hello).unwrap(), 0).unwrap()
}

fn batch(ops: &str) -> String {
    format!(r#"{{"epoch":1,"seq":3,"normalizedFp":"{FP}","ops":[{ops}],"cv":7}}"#)
}

/// The cells a key-only row keeps must equal the general parser's; the rest may be null.
/// An empty `keep` keeps every cell.
fn same_row(fast: &Row, slow: &Row, keep: &[usize]) -> Result<(), String> {
    let (fast, slow) = (fast.to_vec(), slow.to_vec());
    if fast.len() != slow.len() {
        return Err(format!("widths {} / {}", fast.len(), slow.len()));
    }
    for (c, (f, s)) in fast.iter().zip(&slow).enumerate() {
        let kept = keep.is_empty() || keep.contains(&c);
        // A cell not kept is left null, unless the row came before what made it a key.
        if f != s && (kept || *f != Value::Null) {
            return Err(format!("cell {c}: {f:?} / {s:?}"));
        }
    }
    Ok(())
}

/// Whether the fast parse means what the general parse means: the same epoch, seq, cv (to
/// the bit) and ops, every kept cell equal (see [`same_row`]).
fn same_batch(fast: &UpstreamBatch, slow: &UpstreamBatch) -> Result<(), String> {
    let head = |b: &UpstreamBatch| (b.epoch, b.seq, b.cv.map(f64::to_bits));
    if head(fast) != head(slow) {
        return Err(format!(
            "epoch, seq, cv: {:?} / {:?}",
            (fast.epoch, fast.seq, fast.cv),
            (slow.epoch, slow.seq, slow.cv)
        ));
    }
    if fast.ops.len() != slow.ops.len() {
        return Err(format!("{} ops / {}", fast.ops.len(), slow.ops.len()));
    }
    for (i, (f, s)) in fast.ops.iter().zip(&slow.ops).enumerate() {
        if f.table() != s.table() {
            return Err(format!("op {i}: table {:?} / {:?}", f.table(), s.table()));
        }
        let key: &[usize] = match &**f.table() {
            "t" => &[0],
            "k" => &[0, 2],
            _ => &[],
        };
        let rows = match (f, s) {
            (NetOp::Add { row: a, .. }, NetOp::Add { row: b, .. }) => same_row(a, b, &[]),
            (NetOp::Remove { row: a, .. }, NetOp::Remove { row: b, .. }) => same_row(a, b, key),
            (NetOp::Edit { old: a, new: c, .. }, NetOp::Edit { old: b, new: d, .. }) => {
                same_row(a, b, key).and_then(|()| same_row(c, d, &[]))
            }
            _ => Err(format!("different kinds: {f:?} / {s:?}")),
        };
        rows.map_err(|e| format!("op {i}: {e}"))?;
    }
    Ok(())
}

/// The fast parser takes `text`, and agrees with the general one.
fn agrees(text: &str) {
    let room = room();
    let fast = parse_batch_for(text, &room).unwrap_or_else(|| panic!("gave up on {text}"));
    let slow = parse_upstream_batch(text).unwrap();
    if let Err(e) = same_batch(&fast, &slow) {
        panic!("{e} on {text}");
    }
}

/// The fast parser gives up on `text` (the general one decides).
fn gives_up(text: &str) {
    assert!(parse_batch_for(text, &room()).is_none(), "took {text}");
}

#[test]
fn takes_plain_batches_as_the_general_parser_does() {
    agrees(&batch(
        r#"{"table":"t","op":"add","row":[1,"a\"b\\c\n\u00e9\u0001/",true,null]}"#,
    ));
    agrees(&batch(r#"{"table":"t","op":"remove","row":[1,"a",[1],null]}"#).replace("[1],", "-0,"));
    agrees(&batch(
        r#"{"table":"t","op":"remove","row":[-0,"x\ty",1.5e3,false]}"#,
    ));
    agrees(&batch(
        r#"{"table":"k","op":"edit","old":["a","b\"",3],"new":["a",2.5,3]},{"op":"remove","table":"k","row":[1,2,3]}"#,
    ));
    agrees(&batch(
        r#"{"row":[1,2,3,4],"op":"add","table":"t"},{"row":[1,"x",3,4],"table":"t","op":"remove"}"#,
    ));
    agrees(&batch(
        r#"{"table":"t","op":"add","row":[18446744073709551616,-9223372036854775809,1e-7,0.1],"old":null,"extra":{"a":[1,{"b":null}]}}"#,
    ));
    agrees(" { \"seq\" : 1 , \"epoch\":0,\"normalizedFp\":\"ade493d332983993\",\"ops\":[ ] ,\"cv\":null, \"x\":\"\\u2028\"}\n");
    agrees(r#"{"epoch":9007199254740991,"seq":0,"normalizedFp":"ade493d332983993","ops":[]}"#);
    agrees(r#"{"epoch":1,"seq":0,"normalizedF\u0070":"ade493d332983993","ops":[],"cv":-2.5}"#);
}

#[test]
fn keeps_only_the_key_of_a_remove_or_an_old_image() {
    let text = batch(
        r#"{"table":"t","op":"remove","row":[1,"a",2,true]},{"table":"k","op":"edit","old":["a","b",3],"new":["a",2,3]}"#,
    );
    let b = parse_batch_for(&text, &room()).unwrap();
    let n = |f: f64| Value::num(f);
    match &b.ops[..] {
        [NetOp::Remove { row, .. }, NetOp::Edit { old, new, .. }] => {
            assert_eq!(
                row.to_vec(),
                [n(1.0), Value::Null, Value::Null, Value::Null]
            );
            assert_eq!(old.to_vec(), [Value::str("a"), Value::Null, n(3.0)]);
            assert_eq!(new.to_vec(), [Value::str("a"), n(2.0), n(3.0)]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn gives_up_on_anything_else() {
    for ops in [
        r#"{"table":"nope","op":"add","row":[1,2,3,4]}"#,
        r#"{"table":"t","op":"put","row":[1,2,3,4]}"#,
        r#"{"table":"t","op":"add","row":[1,2,3]}"#,
        r#"{"table":"t","op":"remove","row":[1,2,3,4,5]}"#,
        r#"{"table":"t","op":"add","row":null}"#,
        r#"{"table":"t","op":"edit","old":[1,2,3,4]}"#,
        r#"{"table":"t","op":"add","row":[1,2,3,4],"table":"t"}"#,
        r#"{"table":"t","op":"add","row":[1,[2],3,4]}"#,
        r#"{"table":"t","op":"remove","row":[1,{},3,4]}"#,
        r#"{"table":"t","op":"remove","row":[1,1e400,3,4]}"#,
        r#"{"table":"t","op":"add","row":[01,2,3,4]}"#,
        r#"{"table":"t","op":"add","row":[1,2,3,4,]}"#,
        r#"{"table":"t","op":"add","row":[1,"\ud83d\ude00",3,4]}"#,
        r#"{"table":"t","op":"add","row":[1,"a	b",3,4]}"#,
        r#"{"table":"t","op":"add","row":[1,"\x",3,4]}"#,
        r#"{"table":"t","op":"add","row":[1,tru,3,4]}"#,
        r#"["t","add",[1,2,3,4]]"#,
    ] {
        gives_up(&batch(ops));
    }
    for text in [
        r#"{"epoch":1,"seq":3,"normalizedFp":"other","ops":[]}"#,
        r#"{"epoch":1.0,"seq":3,"normalizedFp":"ade493d332983993","ops":[]}"#,
        r#"{"epoch":1,"seq":9007199254740992,"normalizedFp":"ade493d332983993","ops":[]}"#,
        r#"{"epoch":1,"seq":-1,"normalizedFp":"ade493d332983993","ops":[]}"#,
        r#"{"epoch":1,"normalizedFp":"ade493d332983993","ops":[]}"#,
        r#"{"epoch":1,"seq":2,"seq":2,"normalizedFp":"ade493d332983993","ops":[]}"#,
        r#"{"epoch":1,"seq":2,"normalizedFp":"ade493d332983993","ops":[],"cv":"3"}"#,
        r#"{"epoch":1,"seq":2,"normalizedFp":"ade493d332983993","ops":[]} x"#,
        r#"{"epoch":1,"seq":2,"normalizedFp":"ade493d332983993","ops":{}}"#,
        r#"[1,2,"ade493d332983993",null,[]]"#,
        "",
    ] {
        gives_up(text);
    }
}

/// The property: generated texts, both parsers, the same meaning.
#[path = "prop.rs"]
mod prop;
