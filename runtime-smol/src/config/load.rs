//! Loading a configuration: read the file, parse it, apply the environment, resolve
//! relative paths against the file's directory, validate.

use std::path::Path;

use super::error::ErrorInner;
use super::{Config, ConfigError, JournalConfig, WritesConfig};

impl Config {
    /// Reads, parses, overrides from the process environment, resolves relative paths
    /// (`demo.data`, `writes.journal.path`) against the file's directory, and validates.
    pub fn load(path: impl AsRef<Path>) -> Result<Config, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ErrorInner {
                file: Some(path.to_path_buf()),
                location: None,
                option: None,
                message: format!(
                    "cannot read the configuration file: {e} (pass an existing TOML file with \
                 --config)"
                ),
                snippet: None,
                source: Some(e),
            })
            .map_err(ConfigError::from)?;
        let mut config = Config::parse(&text).map_err(|e| e.in_file(path))?;
        config
            .apply_env_with(|name| std::env::var(name).ok())
            .map_err(|e| e.in_file(path))?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            config.resolve_paths(dir);
        }
        config.validate().map_err(|e| e.in_file(path))?;
        Ok(config)
    }

    /// Parses TOML text, overrides from the process environment and validates (relative
    /// paths stay as written).
    pub fn from_toml_str(text: &str) -> Result<Config, ConfigError> {
        Config::from_toml_str_with_env(text, |name| std::env::var(name).ok())
    }

    /// [`Config::from_toml_str`] with the environment given as a lookup function (tests,
    /// hosts with their own secret store).
    pub fn from_toml_str_with_env(
        text: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let mut config = Config::parse(text)?;
        config.apply_env_with(env)?;
        config.validate()?;
        Ok(config)
    }

    /// Resolves relative `demo.data`, `writes.journal.path` and `fleet.data_dir`
    /// against `dir`.
    pub fn resolve_paths(&mut self, dir: &Path) {
        if let Some(data_dir) = self.fleet.as_mut().and_then(|f| f.data_dir.as_mut()) {
            if data_dir.is_relative() {
                *data_dir = dir.join(&*data_dir);
            }
        }
        if let Some(demo) = self.demo.as_mut() {
            if demo.data.is_relative() {
                demo.data = dir.join(&demo.data);
            }
        }
        if let Some(WritesConfig {
            journal: JournalConfig::File { path },
            ..
        }) = self.writes.as_mut()
        {
            if path.is_relative() {
                *path = dir.join(&*path);
            }
        }
    }
}
