//! The box's rules for serving many rooms: which room a
//! downstream URL names, the room-boot wire that places a room on this box, where a
//! room's files live, the rendezvous score placement ranks boxes by, and who gets a room
//! booted (admission).
//!
//! Like the [host](crate::host), this is sans-IO: a driver (the smol server's fleet
//! mode) does the HTTP and the file system, and asks here what the bytes mean.

mod admission;
mod boot_wire;
mod control;
mod hibernation;
mod path;
mod placement;
mod table;

pub use crate::texts::{write_stranded, StrandedMutation};
pub use admission::{
    descriptor_budget, gate, BootAdmission, BootAdmit, BootEnd, BootLimits, DescriptorBudget, Gate,
    DESCRIPTORS_PER_ROOM, GATE_MAX_BYTES, GATE_MAX_FRAMES, RESERVED_DESCRIPTORS,
};
pub use boot_wire::{
    affinity_offer, boot_authorization, boot_backoff_ms, boot_body, boot_reply, drop_ticket_after,
    BootFailure, BootGrant, FlushEndpoints, BOOT_BACKOFF_MAX_MS, BOOT_BACKOFF_START_MS,
    CLOSE_BOOT_FAILED, CLOSE_BOOT_TIMED_OUT, CLOSE_BOX_BUDGET, CLOSE_NO_ROOM, DEFAULT_BOOT_PATH,
    UPSTREAM_SUBPROTOCOL,
};
pub use control::{
    ready_body, revoked_body, rooms_body, route_fleet_control, sorted, stats_body, BoxTotals,
    FleetRoute, RoomState, RoomSummary,
};
pub use hibernation::{budget_plan, idle_to_hibernate, BudgetPlan, LiveRoomView};
pub use path::{doc_from_path, percent_decode, room_path, PathError, MAX_DOC_BYTES, ROOMS_PREFIX};
pub use placement::{locate_room, rendezvous_score, room_dir_name, DIR_DOC_BYTES};
pub use table::{
    ConnId, HibernationRecord, Incarnation, Input, Output, RoomTable, StartError, StopWhy,
    TableCounters, TableRules, CLOSE_SHUTTING_DOWN,
};
