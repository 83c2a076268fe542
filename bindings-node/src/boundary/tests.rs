//! The parts of the boundary that need no JavaScript engine: the panic guard and how a
//! failure becomes a `code`, a message and a `reason`. The JS side (`test/*.test.js`)
//! checks the thrown objects themselves.

use rindle_room_core::{Error, ErrorCode};

use super::{
    guard, Failure, CODE_ARG_TYPE, CODE_CONSTRUCTOR, CODE_FREED, CODE_NODE_API, CODE_PANIC,
};

#[test]
fn a_core_error_keeps_its_code_name_and_message() {
    let f = Failure::Room(Error::new(
        ErrorCode::MutationGap,
        "mutation gap for c1: expected mid 2, got 4",
    ));
    assert_eq!(f.code(), "MUTATION_GAP");
    assert_eq!(
        f.message("WasmRoom.beginMutation"),
        "mutation gap for c1: expected mid 2, got 4"
    );
    assert_eq!(f.reason(), None);
}

#[test]
fn every_core_code_maps_to_its_stable_name() {
    for code in ErrorCode::ALL {
        let f = Failure::Room(Error::new(code, "x"));
        assert_eq!(f.code(), code.name());
    }
}

#[test]
fn a_token_refusal_carries_its_reason() {
    let f = Failure::Room(Error::new(
        ErrorCode::TokenRefused,
        "lease token refused: bad signature",
    ));
    assert_eq!(f.code(), "TOKEN_REFUSED");
    assert_eq!(
        f.message("verifyRoomToken"),
        "lease token refused: bad signature"
    );
    assert_eq!(f.reason(), Some("bad signature"));
}

#[test]
fn boundary_failures_name_the_method() {
    let f = Failure::ArgType(String::from("`sub` must be a string, got number"));
    assert_eq!(f.code(), CODE_ARG_TYPE);
    assert_eq!(
        f.message("WasmRoom.subscribe"),
        "WasmRoom.subscribe: `sub` must be a string, got number"
    );
    assert_eq!(Failure::Freed.code(), CODE_FREED);
    assert!(Failure::Freed
        .message("WasmRoom.apply")
        .starts_with("WasmRoom.apply: the room was freed"));
    assert_eq!(Failure::Retired.code(), CODE_PANIC);
    assert_eq!(Failure::Constructor.code(), CODE_CONSTRUCTOR);
    assert!(Failure::Constructor.is_type_error());
    assert!(Failure::Constructor
        .message("WasmRoom")
        .contains("WasmRoom.open(hello_json, idle_ttl_ms)"));
    let napi = Failure::NodeApi(String::from("a Node-API call failed (Closing): x"));
    assert_eq!(napi.code(), CODE_NODE_API);
    assert!(!napi.is_type_error());
    assert!(napi
        .message("WasmRoom.apply")
        .starts_with("WasmRoom.apply: a Node-API"));
}

#[test]
fn a_panic_becomes_a_failure() {
    let r: Result<(), Failure> = guard(|| panic!("a bug"));
    match r {
        Err(f @ Failure::Panic(_)) => {
            assert_eq!(f.code(), CODE_PANIC);
            let m = f.message("WasmRoom.apply");
            assert!(m.starts_with("WasmRoom.apply: the room panicked"), "{m}");
            assert!(m.ends_with("a bug"), "{m}");
        }
        other => panic!("expected a panic failure, got {other:?}"),
    }
    let r: Result<(), Failure> = guard(|| panic!("{}", String::from("owned")));
    assert!(matches!(r, Err(Failure::Panic(m)) if m.ends_with("owned")));
}

#[test]
fn a_body_that_returns_passes_through() {
    assert_eq!(guard(|| Ok::<_, Failure>(7)).ok(), Some(7));
    let e =
        guard(|| -> Result<(), Failure> { Err(Error::new(ErrorCode::NotLive, "not live").into()) });
    assert!(matches!(e, Err(Failure::Room(e)) if e.code() == ErrorCode::NotLive));
}
