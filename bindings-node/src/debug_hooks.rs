//! Debug builds only: a method that panics inside the room guard, so the JS tests can
//! show that a panic becomes a thrown `Error` (`code` `"PANIC"`) and retires the room.
//! Nothing a caller sends can reach a panic otherwise.

use napi::sys;

use crate::call::{method, Call, Method};

/// `__panicForTests()` (the surface test ignores `__` names).
pub(crate) static METHODS: &[Method] = &[method!("__panicForTests", panic_for_tests)];

fn panic_for_tests(c: &mut Call<'_>) -> napi::Result<sys::napi_value> {
    c.run(|_| -> Result<(), rindle_room_core::Error> { panic!("deliberate panic (tests)") })
}
