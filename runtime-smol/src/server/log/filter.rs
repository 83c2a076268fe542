//! `RINDLE_LOG`: which records the stderr logger writes, in the `env_logger` style.
//!
//! A comma-separated list of directives, each `LEVEL` (the default for every target) or
//! `TARGET=LEVEL` (for targets that start with `TARGET`; the longest matching prefix
//! wins). A bare `TARGET` enables every level of it. Levels are `off`, `error`, `warn`,
//! `info`, `debug` and `trace`, in any case. Unset or empty: `info`.
//!
//! ```text
//! RINDLE_LOG=debug                                     everything at debug
//! RINDLE_LOG=info,rindle_room_smol::server::room=debug the room's per-connection lines
//! RINDLE_LOG=warn,tungstenite=trace                    warnings, and every websocket frame
//! ```

use log::{Level, LevelFilter};

/// A parsed `RINDLE_LOG`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    default: LevelFilter,
    /// `(target prefix, level)`, longest prefix first.
    targets: Vec<(String, LevelFilter)>,
}

impl Default for Filter {
    /// `info` for every target.
    fn default() -> Filter {
        Filter {
            default: LevelFilter::Info,
            targets: Vec::new(),
        }
    }
}

fn level(name: &str) -> Option<LevelFilter> {
    name.trim().parse().ok()
}

impl Filter {
    /// Parses a spec; directives it cannot read are skipped and described in the second
    /// value (the caller logs them once a logger is up).
    pub fn parse(spec: &str) -> (Filter, Vec<String>) {
        let mut filter = Filter::default();
        let mut problems = Vec::new();
        for directive in spec.split(',').map(str::trim).filter(|d| !d.is_empty()) {
            match directive.split_once('=') {
                Some((target, name)) => match (target.trim(), level(name)) {
                    ("", _) => problems.push(format!("{directive:?}: no target before `=`")),
                    (_, None) => problems.push(format!(
                        "{directive:?}: {:?} is not a level (off, error, warn, info, debug, \
                         trace)",
                        name.trim()
                    )),
                    (target, Some(l)) => filter.set(target, l),
                },
                None => match level(directive) {
                    Some(l) => filter.default = l,
                    None if directive.chars().any(char::is_whitespace) => {
                        problems.push(format!("{directive:?}: neither a level nor a target"))
                    }
                    None => filter.set(directive, LevelFilter::Trace),
                },
            }
        }
        filter
            .targets
            .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        (filter, problems)
    }

    fn set(&mut self, target: &str, l: LevelFilter) {
        match self.targets.iter_mut().find(|(t, _)| t == target) {
            Some(entry) => entry.1 = l,
            None => self.targets.push((target.to_string(), l)),
        }
    }

    /// The level that applies to `target`.
    pub fn level_for(&self, target: &str) -> LevelFilter {
        self.targets
            .iter()
            .find(|(prefix, _)| target.starts_with(prefix.as_str()))
            .map_or(self.default, |(_, l)| *l)
    }

    /// Whether a record of `level` for `target` is written.
    pub fn enabled(&self, target: &str, level: Level) -> bool {
        level <= self.level_for(target)
    }

    /// The most verbose level any target enables (for `log::set_max_level`).
    pub fn max_level(&self) -> LevelFilter {
        self.targets
            .iter()
            .map(|(_, l)| *l)
            .fold(self.default, Ord::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_is_info_everywhere() {
        let (f, problems) = Filter::parse("");
        assert!(problems.is_empty());
        assert!(f.enabled("tungstenite::protocol", Level::Info));
        assert!(!f.enabled("rindle_room_smol::server", Level::Debug));
        assert_eq!(f.max_level(), LevelFilter::Info);
    }

    #[test]
    fn the_longest_matching_prefix_wins() {
        let (f, problems) = Filter::parse(
            "warn, rindle_room_smol::server=debug,rindle_room_smol::server::room=TRACE,tungstenite",
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert!(!f.enabled("async_io::reactor", Level::Info));
        assert!(f.enabled("async_io::reactor", Level::Warn));
        assert!(f.enabled("rindle_room_smol::server::upstream", Level::Debug));
        assert!(!f.enabled("rindle_room_smol::server::upstream", Level::Trace));
        assert!(f.enabled("rindle_room_smol::server::room", Level::Trace));
        assert!(f.enabled("tungstenite::handshake::client", Level::Trace));
        assert_eq!(f.max_level(), LevelFilter::Trace);
    }

    #[test]
    fn off_silences_a_target_and_bad_directives_are_reported() {
        let (f, problems) = Filter::parse("debug,tungstenite=off,=info,x=loud,a b");
        assert!(!f.enabled("tungstenite::protocol", Level::Error));
        assert!(f.enabled("rindle_room_smol::server", Level::Debug));
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(
            problems[1].contains("\"loud\" is not a level"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_later_directive_for_the_same_target_wins() {
        let (f, _) = Filter::parse("a=debug,a=error");
        assert_eq!(f.level_for("a::b"), LevelFilter::Error);
    }
}
