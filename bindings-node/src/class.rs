//! The `WasmRoom` class, defined with Node-API directly (`napi_define_class`).
//!
//! napi-rs's `#[napi]` classes register every `&mut self` call in a process-wide borrow
//! table; measured here, that was a quarter of a W1 change seen from JavaScript. So the
//! class is built by hand, from the method tables in `room.rs` and `write.rs`:
//!
//! - every method is a [`Method`]: its JavaScript name, the name used in messages and a
//!   body `fn(&mut Call) -> napi::Result<napi_value>`; one trampoline serves them all,
//!   finding its [`Method`] in the callback data;
//! - `WasmRoom.open` is a static method; it builds the object through the constructor
//!   (which refuses every other `new`), wraps a boxed [`NodeRoom`] in it and type-tags it;
//! - a method checks the tag of `this` before it unwraps the room, so a method borrowed
//!   onto another object throws a `TypeError` instead of misreading a pointer;
//! - everything runs behind `catch_unwind`: a panic becomes a thrown `Error`.
//!
//! `[Symbol.dispose]` is installed natively too, as `free`.

use core::cell::{Cell, RefCell};
use core::ffi::{c_void, CStr};
use core::ptr;
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::panic::{catch_unwind, AssertUnwindSafe};

use napi::sys;
use rindle_room_core::contract::JsonRoom;

use crate::boundary::{check, guard, panic_failure, Arg, Cx, Failure};
use crate::call::{Call, Method, MAX_ARGS};
use crate::node_room::NodeRoom;

/// Marks the objects `WasmRoom.open` made (`napi_type_tag_object`). The bytes spell
/// "rindle-room-node".
static ROOM_TAG: sys::napi_type_tag = sys::napi_type_tag {
    lower: 0x6d6f_6f72_2d65_6c64,
    upper: 0x6564_6f6e_2d6e_6972,
};

/// What the static `open` needs: the class constructor, kept alive by a reference.
#[derive(Debug)]
struct ClassData {
    constructor: sys::napi_ref,
}

thread_local! {
    /// Set while `open` constructs an object: the only `new` the constructor allows.
    static OPENING: Cell<bool> = const { Cell::new(false) };
    /// The addresses of the rooms this thread's objects wrap (added by `new_room`,
    /// removed by the finalizer). A method checks the pointer `napi_unwrap` returns
    /// against it before dereferencing: an object wrapped by anything else (another
    /// addon's class, a borrowed method) is refused. Cheaper per call than
    /// `napi_check_object_type_tag`, which measured ~85 ns.
    static LIVE_ROOMS: RefCell<HashSet<usize, BuildHasherDefault<AddrHasher>>> =
        const { RefCell::new(HashSet::with_hasher(BuildHasherDefault::new())) };
}

/// The hasher of [`LIVE_ROOMS`]: the keys are addresses of distinct live boxes, so one
/// folded multiply spreads them (SipHash, the default, cost more than the rest of the check).
#[derive(Default)]
struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, n: usize) {
        // A folded multiply: the aligned (zero) low bits of an address still spread.
        let p = u128::from(n as u64) * 0x9E37_79B9_7F4A_7C15;
        self.0 = (p as u64) ^ ((p >> 64) as u64);
    }
}

/// Defines the class and sets `exports.WasmRoom`.
pub(crate) fn define(env: sys::napi_env, exports: sys::napi_value) -> napi::Result<()> {
    let data = Box::into_raw(Box::new(ClassData {
        constructor: ptr::null_mut(),
    }));
    let mut props: Vec<sys::napi_property_descriptor> = Vec::new();
    props.push(descriptor(
        c"open",
        ptr::null_mut(),
        Some(open),
        data.cast(),
        sys::PropertyAttributes::static_,
    ));
    let methods = crate::room::METHODS
        .iter()
        .chain(crate::write::METHODS)
        .chain(crate::debug_methods());
    for m in methods {
        let data = ptr::from_ref(m).cast_mut().cast();
        props.push(descriptor(
            m.name,
            ptr::null_mut(),
            Some(call),
            data,
            METHOD,
        ));
    }
    let free = crate::room::METHODS.iter().find(|m| m.name == c"free");
    if let (Some(dispose), Some(free)) = (symbol_dispose(env)?, free) {
        let data = ptr::from_ref(free).cast_mut().cast();
        props.push(descriptor(c"", dispose, Some(call), data, METHOD));
    }
    let name = c"WasmRoom";
    let mut class = ptr::null_mut();
    // SAFETY: `name` is NUL-terminated; the descriptors point at 'static names and
    // methods, or at `data`, which lives as long as the environment (freed by the
    // cleanup hook below).
    check(unsafe {
        sys::napi_define_class(
            env,
            name.as_ptr(),
            name.count_bytes() as isize,
            Some(constructor),
            ptr::null_mut(),
            props.len(),
            props.as_ptr(),
            &mut class,
        )
    })?;
    // SAFETY: `data` came from `Box::into_raw` above and nothing else holds it yet.
    let data_ref = unsafe { &mut *data };
    // SAFETY: `class` is a value of `env`; the out-pointer is valid.
    check(unsafe { sys::napi_create_reference(env, class, 1, &mut data_ref.constructor) })?;
    // SAFETY: the hook frees `data` once, when the environment is torn down.
    check(unsafe { sys::napi_add_env_cleanup_hook(env, Some(free_class_data), data.cast()) })?;
    // SAFETY: `exports` and `class` are values of `env`; the name is NUL-terminated.
    check(unsafe { sys::napi_set_named_property(env, exports, name.as_ptr(), class) })
}

/// Instance methods are writable and configurable, not enumerable (as in a JS class).
const METHOD: sys::napi_property_attributes =
    sys::PropertyAttributes::writable | sys::PropertyAttributes::configurable;

fn descriptor(
    name: &'static CStr,
    symbol: sys::napi_value,
    method: sys::napi_callback,
    data: *mut c_void,
    attributes: sys::napi_property_attributes,
) -> sys::napi_property_descriptor {
    sys::napi_property_descriptor {
        utf8name: if symbol.is_null() {
            name.as_ptr()
        } else {
            ptr::null()
        },
        name: symbol,
        method,
        getter: None,
        setter: None,
        value: ptr::null_mut(),
        attributes,
        data,
    }
}

/// `Symbol.dispose`, where the runtime has it.
fn symbol_dispose(env: sys::napi_env) -> napi::Result<Option<sys::napi_value>> {
    let mut global = ptr::null_mut();
    let mut symbol_ctor = ptr::null_mut();
    let mut dispose = ptr::null_mut();
    let mut t = 0;
    // SAFETY: every out-pointer is valid; the names are NUL-terminated; the values are
    // of `env`.
    unsafe {
        check(sys::napi_get_global(env, &mut global))?;
        check(sys::napi_get_named_property(
            env,
            global,
            c"Symbol".as_ptr(),
            &mut symbol_ctor,
        ))?;
        check(sys::napi_get_named_property(
            env,
            symbol_ctor,
            c"dispose".as_ptr(),
            &mut dispose,
        ))?;
        check(sys::napi_typeof(env, dispose, &mut t))?;
    }
    Ok((t == sys::ValueType::napi_symbol).then_some(dispose))
}

unsafe extern "C" fn free_class_data(data: *mut c_void) {
    // SAFETY: `data` is the `ClassData` box of `define`; this hook runs once. The
    // reference dies with the environment.
    drop(unsafe { Box::from_raw(data.cast::<ClassData>()) });
}

/// Reads the callback's arguments, `this` and data.
///
/// # Safety
///
/// `env` and `info` are those of the current callback.
unsafe fn callback_info(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> napi::Result<([sys::napi_value; MAX_ARGS], sys::napi_value, *mut c_void)> {
    let mut argc = MAX_ARGS;
    let mut args = [ptr::null_mut(); MAX_ARGS];
    let mut this = ptr::null_mut();
    let mut data = ptr::null_mut();
    // SAFETY: forwarded from the caller; `args` has room for `argc` values (missing ones
    // are filled with `undefined`).
    check(unsafe {
        sys::napi_get_cb_info(
            env,
            info,
            &mut argc,
            args.as_mut_ptr(),
            &mut this,
            &mut data,
        )
    })?;
    Ok((args, this, data))
}

/// Ends a callback: a value is returned; a failure was thrown (or is thrown now).
fn finish(cx: &Cx, result: std::thread::Result<napi::Result<sys::napi_value>>) -> sys::napi_value {
    match result {
        Ok(Ok(value)) => value,
        Ok(Err(e)) => {
            cx.throw_napi(&e);
            ptr::null_mut()
        }
        Err(payload) => {
            cx.throw(&panic_failure(payload));
            ptr::null_mut()
        }
    }
}

/// The room wrapped in `this`, once its tag says `open` made it.
///
/// # Safety
///
/// `env` and `this` are those of the current callback, and no other reference to the
/// room is alive (methods never call back into JavaScript while they hold it).
unsafe fn room_of<'a>(cx: &Cx, this: sys::napi_value) -> napi::Result<&'a mut NodeRoom> {
    let not_a_room = || {
        cx.throw(&Failure::ArgType(String::from(
            "`this` is not a room (call the method on an object from WasmRoom.open)",
        )))
    };
    let mut room: *mut c_void = ptr::null_mut();
    // SAFETY: forwarded from the caller; a value that wraps nothing fails the call.
    let status = unsafe { sys::napi_unwrap(cx.env(), this, &mut room) };
    if status != sys::Status::napi_ok || room.is_null() {
        return Err(not_a_room());
    }
    // Only the address is compared here; nothing is read through `room` unless it is the
    // box of a live room of ours.
    let ours = LIVE_ROOMS.with(|live| {
        live.try_borrow()
            .is_ok_and(|l| l.contains(&(room as usize)))
    });
    if !ours {
        return Err(not_a_room());
    }
    // SAFETY: `room` is the address of a `Box<NodeRoom>` that `new_room` wrapped and
    // whose finalizer has not run (it removes the address first), and the finalizer
    // cannot run while `this` is an argument of this call; the caller guarantees this is
    // the only reference.
    Ok(unsafe { &mut *room.cast::<NodeRoom>() })
}

/// The trampoline of every instance method.
unsafe extern "C" fn call(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let mut cx = Cx::raw(env, "WasmRoom");
    let result = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the callback's own env and info.
        let (args, this, data) = unsafe { callback_info(env, info) }?;
        // SAFETY: every descriptor that uses this trampoline carries a `&'static Method`.
        let method = unsafe { &*data.cast::<Method>() };
        cx = Cx::raw(env, method.what);
        // SAFETY: the callback's own env and `this`; no other reference exists.
        let room = unsafe { room_of(&cx, this) }?;
        (method.body)(&mut Call { cx, args, room })
    }));
    finish(&cx, result)
}

/// The constructor: refuses `new WasmRoom()`, accepts the object `open` is building.
unsafe extern "C" fn constructor(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let cx = Cx::raw(env, "WasmRoom");
    let result = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the callback's own env and info.
        let (_, this, _) = unsafe { callback_info(env, info) }?;
        if OPENING.with(Cell::get) {
            Ok(this)
        } else {
            Err(cx.throw(&Failure::Constructor))
        }
    }));
    finish(&cx, result)
}

/// `WasmRoom.open(hello_json, idle_ttl_ms)`.
unsafe extern "C" fn open(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let cx = Cx::raw(env, "WasmRoom.open");
    let result = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the callback's own env and info.
        let (args, _, data) = unsafe { callback_info(env, info) }?;
        let hello = cx.text(Arg::new(env, args[0]), "hello_json")?;
        let ttl = cx.number(Arg::new(env, args[1]), "idle_ttl_ms")?;
        let room = cx.settle(guard(|| Ok(JsonRoom::open(&hello, ttl)?)))?;
        // SAFETY: `open`'s descriptor carries the `ClassData` of `define`, alive for as
        // long as the environment.
        let class = unsafe { &*data.cast::<ClassData>() };
        new_room(env, class, NodeRoom::new(room))
    }));
    finish(&cx, result)
}

/// Constructs a `WasmRoom` object holding `room`.
fn new_room(
    env: sys::napi_env,
    class: &ClassData,
    room: NodeRoom,
) -> napi::Result<sys::napi_value> {
    let mut constructor = ptr::null_mut();
    // SAFETY: the reference was created in `define` for this env.
    check(unsafe { sys::napi_get_reference_value(env, class.constructor, &mut constructor) })?;
    let mut object = ptr::null_mut();
    OPENING.with(|o| o.set(true));
    // SAFETY: `constructor` is the class; no arguments; `object` is a valid out-pointer.
    let status = unsafe { sys::napi_new_instance(env, constructor, 0, ptr::null(), &mut object) };
    OPENING.with(|o| o.set(false));
    check(status)?;
    let boxed = Box::into_raw(Box::new(room));
    // SAFETY: `object` is a fresh, unwrapped instance; on success the finalizer owns
    // `boxed` and frees it exactly once.
    let status = unsafe {
        sys::napi_wrap(
            env,
            object,
            boxed.cast(),
            Some(finalize_room),
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    if status != sys::Status::napi_ok {
        // SAFETY: the wrap failed, so `boxed` is still ours alone.
        drop(unsafe { Box::from_raw(boxed) });
        return check(status).map(|()| object);
    }
    LIVE_ROOMS.with(|live| {
        if let Ok(mut l) = live.try_borrow_mut() {
            l.insert(boxed as usize);
        }
    });
    // SAFETY: `object` is a value of `env` and not tagged yet.
    check(unsafe { sys::napi_type_tag_object(env, object, &ROOM_TAG) })?;
    Ok(object)
}

unsafe extern "C" fn finalize_room(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // A panic while dropping must not unwind into Node.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        LIVE_ROOMS.with(|live| {
            if let Ok(mut l) = live.try_borrow_mut() {
                l.remove(&(data as usize));
            }
        });
        // SAFETY: `data` is the box `new_room` wrapped; Node calls this once, after the
        // object is unreachable.
        drop(unsafe { Box::from_raw(data.cast::<NodeRoom>()) })
    }));
}
