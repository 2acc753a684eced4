//! Scene files: reading the TOML, checking it, and turning it into a [`crate::model::Model`].
//!
//! Reading is strict (unknown keys are errors) and every problem names the file, the line and
//! column, the key, what was given and what is allowed. Checks after parsing collect every
//! problem before reporting, so a user fixes all mistakes in one pass.

mod diagnostics;
mod resolve;
pub mod schema;

pub use diagnostics::{Diagnostic, SceneError};
pub use resolve::{resolve, MAX_COURANT};

use crate::model::Model;
use std::path::Path;

/// Read, parse and check a scene file; on success return the model and any warnings.
pub fn load(path: &Path) -> Result<(Model, Vec<String>), SceneError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| SceneError::Io {
        file: file.clone(),
        message: e.to_string(),
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        SceneError::single(
            &file,
            "",
            0,
            "",
            format!(
                "the file is not valid UTF-8 (invalid byte at offset {}); save it as UTF-8 text",
                e.utf8_error().valid_up_to()
            ),
        )
    })?;
    load_str(&text, &file)
}

/// Parse and check scene text; `file` is used in messages only.
pub fn load_str(text: &str, file: &str) -> Result<(Model, Vec<String>), SceneError> {
    if text.trim().is_empty() {
        return Err(SceneError::single(
            file,
            text,
            0,
            "",
            "the scene file is empty: it needs at least a [simulation] table with cell_size and size"
                .to_string(),
        ));
    }
    let parsed: schema::SceneFile =
        toml::from_str(text).map_err(|e| diagnostics::from_toml(file, text, &e))?;
    resolve(&parsed, text, file)
}
