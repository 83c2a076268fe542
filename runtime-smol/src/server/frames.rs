//! The text of every frame the room sends: the host's ([`rindle_room_core::host::frames`]),
//! re-exported for embedders and tests.

pub use rindle_room_core::host::frames::*;
