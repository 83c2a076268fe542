//! The room's errors: a stable machine code plus a message that says what was wrong.
//!
//! Codes are part of the public contract: the C ABI returns them as result codes and the
//! Node binding sets them as the `code` property. Never renumber a variant.

use alloc::string::String;
use core::fmt;

/// What kind of thing went wrong. Stable numbers; new variants get new numbers.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum ErrorCode {
    /// Input text is not JSON, or a JSON value has the wrong shape or type.
    MalformedInput = 100,
    /// An argument is out of its documented range (a negative time, a NaN epoch, …).
    InvalidArgument = 101,
    /// The upstream hello breaks a rule of `open` (comparator version, table shape, …).
    InvalidHello = 110,
    /// A `normalizedFp` does not match the tables it describes.
    FingerprintMismatch = 111,
    /// An upstream batch carries an epoch newer than the store's.
    EpochAhead = 112,
    /// An upstream batch skips sequence numbers (or the first batch is not seq 0).
    SequenceGap = 113,
    /// An upstream batch does not fit the store (duplicate add, missing key, wrong width,
    /// unknown table): the store is now poisoned.
    Poisoned = 114,
    /// The store has no snapshot yet, or was poisoned earlier: it cannot serve.
    NotLive = 115,
    /// A query the room refuses: a malformed AST (`ast: not a wire Ast: …`) or one it
    /// cannot build (`subscribe: Query(…)`), in the published room's words.
    UnsupportedQuery = 120,
    /// A write-plane call arrived in the wrong state (no write plane, a second
    /// transaction, no open transaction, a flush already in flight, …).
    WrongState = 130,
    /// A mutation id skipped ahead of the client's applied watermark.
    MutationGap = 131,
    /// A staged write was refused (existing key, missing row, wrong width, pk change,
    /// table not writable); the head is untouched.
    WriteRefused = 132,
    /// A write-plane specification (owned tables, scope specs) is invalid.
    InvalidScope = 133,
    /// A mutator used a capability rooms lack (`tx.query`): hosts answer with an
    /// `environment` deopt.
    Environment = 134,
    /// A lease token was refused; the message is the `lease token refused: …` reason.
    TokenRefused = 140,
    /// An internal invariant failed; a bug in the room, reported instead of panicking.
    Internal = 199,
}

impl ErrorCode {
    /// The stable number of this code.
    pub fn as_u32(self) -> u32 {
        self as u32
    }

    /// A stable, machine-readable name (`"MALFORMED_INPUT"`, …).
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::MalformedInput => "MALFORMED_INPUT",
            ErrorCode::InvalidArgument => "INVALID_ARGUMENT",
            ErrorCode::InvalidHello => "INVALID_HELLO",
            ErrorCode::FingerprintMismatch => "FINGERPRINT_MISMATCH",
            ErrorCode::EpochAhead => "EPOCH_AHEAD",
            ErrorCode::SequenceGap => "SEQUENCE_GAP",
            ErrorCode::Poisoned => "POISONED",
            ErrorCode::NotLive => "NOT_LIVE",
            ErrorCode::UnsupportedQuery => "UNSUPPORTED_QUERY",
            ErrorCode::WrongState => "WRONG_STATE",
            ErrorCode::MutationGap => "MUTATION_GAP",
            ErrorCode::WriteRefused => "WRITE_REFUSED",
            ErrorCode::InvalidScope => "INVALID_SCOPE",
            ErrorCode::Environment => "ENVIRONMENT",
            ErrorCode::TokenRefused => "TOKEN_REFUSED",
            ErrorCode::Internal => "INTERNAL",
        }
    }

    /// Every code, for hosts that publish the table.
    pub const ALL: [ErrorCode; 16] = [
        ErrorCode::MalformedInput,
        ErrorCode::InvalidArgument,
        ErrorCode::InvalidHello,
        ErrorCode::FingerprintMismatch,
        ErrorCode::EpochAhead,
        ErrorCode::SequenceGap,
        ErrorCode::Poisoned,
        ErrorCode::NotLive,
        ErrorCode::UnsupportedQuery,
        ErrorCode::WrongState,
        ErrorCode::MutationGap,
        ErrorCode::WriteRefused,
        ErrorCode::InvalidScope,
        ErrorCode::Environment,
        ErrorCode::TokenRefused,
        ErrorCode::Internal,
    ];
}

/// An error with its code and a human-readable message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    code: ErrorCode,
    message: String,
}

impl Error {
    /// Builds an error.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Error {
        Error {
            code,
            message: message.into(),
        }
    }

    /// The machine code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The message (what the JSON contract throws).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Shorthand for a malformed-input error.
    pub(crate) fn malformed(message: impl Into<String>) -> Error {
        Error::new(ErrorCode::MalformedInput, message)
    }

    /// An AST whose shape is wrong (what the published room's AST decoding refuses):
    /// `ast: not a wire Ast: <what>`.
    pub(crate) fn ast_shape(what: impl fmt::Display) -> Error {
        Error::new(
            ErrorCode::UnsupportedQuery,
            alloc::format!("ast: not a wire Ast: {what}"),
        )
    }

    /// A query naming a table the room does not hold:
    /// `subscribe: Query(UnknownTable { table: "t" })`.
    pub(crate) fn unknown_table(name: &str) -> Error {
        Error::query(alloc::format!("UnknownTable {{ table: {name:?} }}"))
    }

    /// A query naming a column its table lacks:
    /// `subscribe: Query(Build(UnknownColumn("c")))`.
    pub(crate) fn unknown_column(name: &str) -> Error {
        Error::query(alloc::format!("Build(UnknownColumn({name:?}))"))
    }

    /// A well-formed query that means nothing:
    /// `subscribe: Query(Build(Invalid("why")))`.
    pub(crate) fn query_invalid(why: &str) -> Error {
        Error::query(alloc::format!("Build(Invalid({why:?}))"))
    }

    /// A query rooms do not serve: `subscribe: Query(Build(Unsupported("why")))`.
    pub(crate) fn query_unsupported(why: &str) -> Error {
        Error::query(alloc::format!("Build(Unsupported({why:?}))"))
    }

    /// A subscription on a store that is not live (no snapshot yet, or poisoned):
    /// `<call>: Query(StoreNotLive)` (`subscribe`, `lmid subscribe`).
    pub(crate) fn store_not_live(call: &str) -> Error {
        Error::new(
            ErrorCode::NotLive,
            alloc::format!("{call}: Query(StoreNotLive)"),
        )
    }

    fn query(inner: String) -> Error {
        Error::new(
            ErrorCode::UnsupportedQuery,
            alloc::format!("subscribe: Query({inner})"),
        )
    }

    /// Whether this refuses a well-formed query the room cannot build (the published
    /// room checks that the store is live first; a malformed AST is refused before).
    pub fn is_query_build(&self) -> bool {
        self.code == ErrorCode::UnsupportedQuery && self.message.starts_with("subscribe: Query(")
    }

    /// Whether this refuses what a well-formed query means (`Query(Build(…))`: an unknown
    /// column, an invalid or unsupported condition), not its shape or its tables.
    pub(crate) fn is_build_refusal(&self) -> bool {
        self.code == ErrorCode::UnsupportedQuery
            && self.message.starts_with("subscribe: Query(Build(")
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl core::error::Error for Error {}
