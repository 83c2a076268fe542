//! Shared helpers for the cross-face tests.
