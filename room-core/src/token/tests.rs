use super::*;
use alloc::string::ToString;
use alloc::vec;

fn keys() -> Vec<(String, String)> {
    vec![
        ("k1".to_string(), "secret-one".to_string()),
        ("k2".to_string(), "two".to_string()),
    ]
}

fn ast() -> JsValue {
    JsValue::parse(r#"{"table":"note","where":{"type":"simple","op":"=","left":{"type":"column","name":"id"},"right":{"type":"literal","value":1}}}"#).unwrap()
}

fn token(now: f64, ttl: f64) -> String {
    let ast = ast();
    mint(&MintOptions {
        doc: "doc/1",
        ast: Some(&ast),
        sub: "user:a",
        kid: "k1",
        key: "secret-one",
        ttl_ms: ttl,
        now_ms: now,
        scopes_hash: Some("0a1b2c3d"),
    })
    .unwrap()
}

fn refusal(t: &str, doc: &str, now: f64) -> TokenRefusal {
    verify(t, doc, &keys(), now).unwrap_err().0
}

/// Signs an arbitrary payload text with the k1 secret.
fn sign_raw(payload: &[u8]) -> String {
    let mut t = String::from("rt1.");
    b64url_encode(payload, &mut t);
    let sig = mac_for("secret-one", t.as_bytes()).finalize().into_bytes();
    t.push('.');
    b64url_encode(&sig, &mut t);
    t
}

#[test]
fn base64url_vectors() {
    let enc = |b: &[u8]| {
        let mut s = String::new();
        b64url_encode(b, &mut s);
        s
    };
    for (plain, coded) in [
        ("", ""),
        ("f", "Zg"),
        ("fo", "Zm8"),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg"),
        ("fooba", "Zm9vYmE"),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(enc(plain.as_bytes()), coded);
        assert_eq!(b64url_decode(coded).unwrap(), plain.as_bytes());
    }
    assert_eq!(enc(&[0xfb, 0xff]), "-_8");
    assert_eq!(b64url_decode("Zg==").unwrap(), b"f");
    assert!(b64url_decode("Z").is_none());
    assert!(b64url_decode("Zm9v+").is_none());
}

#[test]
fn hmac_rfc4231_case_2() {
    let out = mac_for("Jefe", b"what do ya want for nothing?")
        .finalize()
        .into_bytes();
    let hex: String = out.iter().map(|b| alloc::format!("{b:02x}")).collect();
    assert_eq!(
        hex,
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    );
}

#[test]
fn mint_then_verify() {
    let t = token(1_000.0, 60_000.0);
    assert!(t.starts_with("rt1."));
    assert_eq!(t.split('.').nth(2).unwrap().len(), 43);
    let p = verify(&t, "doc/1", &keys(), 2_000.0).unwrap();
    assert_eq!(p.sub, "user:a");
    assert_eq!(p.iat, 1_000.0);
    assert_eq!(p.exp, 61_000.0);
    assert_eq!(p.scopes_hash.as_deref(), Some("0a1b2c3d"));
    assert_eq!(p.ast, ast());
    // The payload is the JSON.stringify text, key order as the minter wrote it.
    let payload = b64url_decode(t.split('.').nth(1).unwrap()).unwrap();
    assert!(core::str::from_utf8(&payload)
        .unwrap()
        .starts_with(r#"{"v":1,"doc":"doc/1","ast":{"table":"note","where""#));
}

#[test]
fn every_refusal_reason() {
    let t = token(1_000.0, 60_000.0);
    let segs: Vec<&str> = t.split('.').collect();
    // Tamper each segment.
    let bad_prefix = alloc::format!("rt2.{}.{}", segs[1], segs[2]);
    assert_eq!(refusal(&bad_prefix, "doc/1", 2e3), TokenRefusal::Malformed);
    let other = token(1_001.0, 60_000.0);
    let swapped_payload = alloc::format!("rt1.{}.{}", other.split('.').nth(1).unwrap(), segs[2]);
    assert_eq!(
        refusal(&swapped_payload, "doc/1", 2e3),
        TokenRefusal::BadSignature
    );
    let mut sig = String::from(segs[2]);
    let last = sig.pop().unwrap();
    sig.push(if last == 'A' { 'B' } else { 'A' });
    let bad_sig = alloc::format!("rt1.{}.{}", segs[1], sig);
    assert_eq!(refusal(&bad_sig, "doc/1", 2e3), TokenRefusal::BadSignature);
    // Claims.
    assert_eq!(refusal(&t, "doc/2", 2e3), TokenRefusal::WrongDocument);
    assert_eq!(refusal(&t, "doc/1", 61_000.0), TokenRefusal::Expired);
    assert_eq!(refusal(&t, "doc/1", 1e12), TokenRefusal::Expired);
    let v2 = sign_raw(br#"{"v":2,"doc":"doc/1","ast":{},"sub":"u","iat":0,"exp":1e15,"kid":"k1"}"#);
    assert_eq!(refusal(&v2, "doc/1", 1.0), TokenRefusal::UnsupportedVersion);
    let unknown =
        sign_raw(br#"{"v":1,"doc":"doc/1","ast":{},"sub":"u","iat":0,"exp":1e15,"kid":"k9"}"#);
    assert_eq!(refusal(&unknown, "doc/1", 1.0), TokenRefusal::UnknownKey);
    // Shapes and encodings.
    for bad in [
        "",
        "rt1",
        "rt1.",
        "rt1..",
        "rt1.a.b.c",
        "rt1.!!!.abc",
        "x.y.z",
    ] {
        assert_eq!(
            refusal(bad, "doc/1", 1.0),
            TokenRefusal::Malformed,
            "{bad:?}"
        );
    }
    let not_utf8 = sign_raw(&[0xff, 0xfe, b'{', b'}']);
    assert_eq!(refusal(&not_utf8, "doc/1", 1.0), TokenRefusal::Malformed);
    let not_object = sign_raw(b"[1,2]");
    assert_eq!(refusal(&not_object, "doc/1", 1.0), TokenRefusal::Malformed);
    let no_kid = sign_raw(br#"{"v":1,"doc":"doc/1"}"#);
    assert_eq!(refusal(&no_kid, "doc/1", 1.0), TokenRefusal::Malformed);
    let bad_types =
        sign_raw(br#"{"v":1,"doc":7,"ast":{},"sub":"u","iat":0,"exp":1e15,"kid":"k1"}"#);
    assert_eq!(refusal(&bad_types, "doc/1", 1.0), TokenRefusal::Malformed);
    let huge = alloc::format!("rt1.{}.x", "A".repeat(MAX_TOKEN_LEN));
    assert_eq!(refusal(&huge, "doc/1", 1.0), TokenRefusal::Malformed);
    assert_eq!(
        alloc::format!("{}", TokenError(TokenRefusal::UnknownKey)),
        "lease token refused: unknown key"
    );
}

#[test]
fn constant_time_eq() {
    assert!(ct_eq(b"abc", b"abc"));
    assert!(!ct_eq(b"abc", b"abd"));
    assert!(!ct_eq(b"abc", b"ab"));
}

#[test]
fn scope_hash_is_key_order_insensitive() {
    let a = scope_specs_hash_json(
        r#"[{"writable":{"joinKeyCols":[],"kind":"predicate"},"table":"issue"}]"#,
    )
    .unwrap();
    let b = scope_specs_hash_json(
        r#"[{"table":"issue","writable":{"kind":"predicate","joinKeyCols":[]}}]"#,
    )
    .unwrap();
    assert_eq!(a, b);
    assert_eq!(
        a,
        crate::fingerprint::fnv1a32_hex(
            br#"[{"table":"issue","writable":{"joinKeyCols":[],"kind":"predicate"}}]"#
        )
    );
    assert_eq!(a.len(), 8);
}

/// `tests/vectors/scope-specs-hash.json`: hashes the published JavaScript package
/// computed (non-ASCII text, keys that sort differently in UTF-16 and UTF-8, unpaired
/// surrogates, number spellings, raw JSON texts).
const PUBLISHED_SCOPE_HASHES: &str = include_str!("../../../tests/vectors/scope-specs-hash.json");

#[test]
fn scope_hash_equals_the_published_one_on_every_vector() {
    let file: serde_json::Value = serde_json::from_str(PUBLISHED_SCOPE_HASHES)
        .expect("tests/vectors/scope-specs-hash.json is JSON");
    let vectors = file["vectors"].as_array().expect("a `vectors` array");
    assert!(vectors.len() >= 35, "only {} vectors", vectors.len());
    let mut wrong = Vec::new();
    let mut as_values = 0;
    for v in vectors {
        let (name, specs, want) = (
            v["name"].as_str().unwrap(),
            v["specs"].as_str().unwrap(),
            v["hash"].as_str().unwrap(),
        );
        let got = scope_specs_hash_json(specs).unwrap_or_else(|e| alloc::format!("error {e}"));
        if got != want {
            wrong.push(alloc::format!(
                "{name}: {got} from the text, published {want}"
            ));
        }
        // The same specs as a parsed value (what the host hashes), where a Rust string
        // and a double can hold them.
        if let Ok(value) = JsValue::parse(specs) {
            as_values += 1;
            let got = scope_specs_hash(&value);
            if got != want {
                let jcs = value.to_jcs_string();
                wrong.push(alloc::format!(
                    "{name}: {got} from the value, published {want}; canonical text {jcs:?}"
                ));
            }
        }
    }
    assert!(as_values >= 30, "only {as_values} vectors parsed as values");
    assert!(
        wrong.is_empty(),
        "scopeSpecsHash differs from the published package (regenerate the vectors with \
         bindings-node/test/support/scope-hash-vectors.mjs only after upgrading it):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn scope_hash_counts_utf16_units_not_utf8_bytes() {
    // "é" is one unit (0x00e9) and two UTF-8 bytes: hashing the bytes gave another value.
    let specs = r#"[{"a":"é"}]"#;
    let jcs = JsValue::parse(specs).unwrap().to_jcs_string();
    assert_eq!(
        scope_specs_hash_json(specs).unwrap(),
        crate::fingerprint::fnv1a32_utf16_hex(&jcs)
    );
    assert_ne!(
        scope_specs_hash_json(specs).unwrap(),
        crate::fingerprint::fnv1a32_hex(jcs.as_bytes())
    );
}

#[test]
fn scope_hash_reads_what_json_parse_reads() {
    let same = |a: &str, b: &str| {
        assert_eq!(
            scope_specs_hash_json(a).unwrap(),
            scope_specs_hash_json(b).unwrap(),
            "{a} vs {b}"
        )
    };
    same(r#"["\ud800"]"#, r#"[ "\uD800" ]"#);
    same(r#"["\ud83d\ude00"]"#, r#"["😀"]"#);
    same("[1e400]", "[null]");
    same("[-0, 1E21, 1.50]", "[0,1e21,1.5]");
    same(r#"{"a":1,"a":2}"#, r#"{"a":2}"#);
    // An unpaired surrogate is its own string, unlike U+FFFD.
    assert_ne!(
        scope_specs_hash_json(r#"["\ud800"]"#).unwrap(),
        scope_specs_hash_json(r#"["\ufffd"]"#).unwrap()
    );
    let deep = |n: usize| alloc::format!("{}1{}", "[".repeat(n), "]".repeat(n));
    assert!(scope_specs_hash_json(&deep(scope_hash::MAX_DEPTH)).is_ok());
    let err = scope_specs_hash_json(&deep(scope_hash::MAX_DEPTH + 1)).unwrap_err();
    assert!(err.to_string().contains("deeper than 256"), "{err}");
}

#[test]
fn scope_hash_refuses_what_json_parse_refuses() {
    for text in [
        "",
        " ",
        "[1,]",
        "[1 2]",
        "{\"a\"}",
        "{\"a\":1,}",
        "{a:1}",
        "['a']",
        "[01]",
        "[.5]",
        "[1.]",
        "[+1]",
        "[1e]",
        "[-]",
        "[NaN]",
        "[Infinity]",
        "[nul]",
        "[\"a]",
        "[\"\\x\"]",
        "[\"\\u12\"]",
        "[\"\\u12g4\"]",
        "[\"\u{1}\"]",
        "[\"\t\"]",
        "[1] x",
        "\u{feff}[1]",
        "[",
        "{",
        "[\"\\",
        "\"\\u",
    ] {
        let err = scope_specs_hash_json(text).expect_err(text);
        assert_eq!(err.code(), ErrorCode::MalformedInput, "{text:?}: {err}");
        assert!(
            err.to_string().starts_with("scope specs are not JSON: "),
            "{text:?}: {err}"
        );
    }
}

proptest::proptest! {
    /// The host hashes parsed specs ([`scope_specs_hash`]), the faces hash text
    /// ([`scope_specs_hash_json`]): the two agree on every value both can hold.
    #[test]
    fn scope_hash_of_a_value_equals_that_of_its_text(value in any_specs()) {
        let text = value.to_js_string();
        proptest::prop_assert_eq!(
            scope_specs_hash(&value),
            scope_specs_hash_json(&text).unwrap(),
            "{}", text
        );
    }
}

proptest::proptest! {
    /// Any text is hashed or refused as malformed, never a panic.
    #[test]
    fn scope_hash_of_any_text_never_panics(
        text in "[\\[\\]{}\":,\\\\u0-9a-fA-F.eE+\\- \t\nnulltrsé😀\u{0}]{0,40}"
    ) {
        if let Err(e) = scope_specs_hash_json(&text) {
            proptest::prop_assert_eq!(e.code(), ErrorCode::MalformedInput);
        }
    }
}

fn any_specs() -> impl proptest::strategy::Strategy<Value = JsValue> {
    use proptest::prelude::*;
    let text = "[a-zA-Z_é中😀\u{e000}\u{ffff}\u{10000}\\\"\u{0}-\u{1f} ]{0,6}";
    let leaf = prop_oneof![
        Just(JsValue::Null),
        any::<bool>().prop_map(JsValue::Bool),
        any::<f64>().prop_map(JsValue::Num),
        text.prop_map(JsValue::Str),
    ];
    leaf.prop_recursive(4, 32, 5, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(JsValue::Arr),
            // Distinct names (a parsed object has no repeated name), in reverse UTF-8
            // byte order: the hash's sort has work to do.
            proptest::collection::btree_map(text, inner, 0..5)
                .prop_map(|members| JsValue::Obj(members.into_iter().rev().collect())),
        ]
    })
}
