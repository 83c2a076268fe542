//! The environment overrides: secrets that may come from the process environment
//! instead of the file.

use super::{invalid, Config, ConfigError, ENV_SHELL_SECRET};

/// Env: overrides `upstream.auth_token`.
pub const ENV_UPSTREAM_AUTH_TOKEN: &str = "RINDLE_UPSTREAM_AUTH_TOKEN";
/// Env: merged into `downstream.token_keys`, as `kid=secret,kid2=secret2`.
pub const ENV_TOKEN_KEYS: &str = "RINDLE_TOKEN_KEYS";
/// Env: overrides `control.auth_token`.
pub const ENV_CONTROL_AUTH_TOKEN: &str = "RINDLE_CONTROL_AUTH_TOKEN";
/// Env: merged into `authority.headers`, as `name=value,name2=value2`.
pub const ENV_AUTHORITY_HEADERS: &str = "RINDLE_AUTHORITY_HEADERS";

impl Config {
    /// Applies the environment overrides through `env` (a variable lookup). A variable
    /// that is unset or empty changes nothing. Token strings replace the file's value;
    /// the key ring and the authority headers are merged, the variable winning for a
    /// name in both. Overrides of a section the file does not have (`[upstream]`,
    /// `[control]`, `[authority]`) are ignored: the environment supplies secrets, it
    /// does not switch features on.
    pub fn apply_env_with(
        &mut self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<(), ConfigError> {
        let get = |name: &str| env(name).filter(|v| !v.is_empty());
        if let (Some(upstream), Some(token)) =
            (self.upstream.as_mut(), get(ENV_UPSTREAM_AUTH_TOKEN))
        {
            upstream.auth_token = Some(token);
        }
        if let Some(ring) = get(ENV_TOKEN_KEYS) {
            for (kid, secret) in parse_pairs(ENV_TOKEN_KEYS, &ring, "kid=secret,kid2=secret2")? {
                self.downstream.token_keys.insert(kid, secret);
            }
        }
        if let (Some(fleet), Some(secret)) = (self.fleet.as_mut(), get(ENV_SHELL_SECRET)) {
            fleet.shell_secret = secret;
        }
        if let (Some(control), Some(token)) = (self.control.as_mut(), get(ENV_CONTROL_AUTH_TOKEN)) {
            control.auth_token = token;
        }
        if let (Some(authority), Some(headers)) =
            (self.authority.as_mut(), get(ENV_AUTHORITY_HEADERS))
        {
            for (name, value) in parse_pairs(ENV_AUTHORITY_HEADERS, &headers, "name=value,…")? {
                authority.headers.insert(name, value);
            }
        }
        Ok(())
    }
}

/// Parses `name=value,name2=value2` (entries trimmed, empty entries skipped). Errors
/// never echo a value: they are secrets.
fn parse_pairs(var: &str, text: &str, shape: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let mut out = Vec::new();
    for (i, entry) in text.split(',').map(str::trim).enumerate() {
        if entry.is_empty() {
            continue;
        }
        let Some((name, value)) = entry.split_once('=') else {
            return Err(invalid(
                var,
                format!("{var}: entry {} has no `=` (expected {shape})", i + 1),
            ));
        };
        let (name, value) = (name.trim(), value.trim());
        if name.is_empty() {
            return Err(invalid(
                var,
                format!(
                    "{var}: entry {} has an empty name (expected {shape})",
                    i + 1
                ),
            ));
        }
        if value.is_empty() {
            return Err(invalid(
                var,
                format!("{var}: the value for {name:?} is empty (expected {shape})"),
            ));
        }
        out.push((name.to_string(), value.to_string()));
    }
    Ok(out)
}
