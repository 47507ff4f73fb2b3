//! `--patch`: rebuild the modules a kernel patch touches (placeholder until the build lands).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::kernel::GuestKernel;
use super::LabError;

/// The modules rebuilt for a patch.
#[derive(Debug, Clone)]
pub struct Rebuilt {
    /// (module name, the rebuilt `.ko`).
    pub modules: Vec<(String, PathBuf)>,
    /// True when the modules came from the cache.
    pub cached: bool,
    /// The build's wall clock (zero when cached).
    pub time: Duration,
}

/// Rebuild the modules `patch` touches for `kernel`.
pub fn rebuild(
    _cache: &Path,
    _kernel: &GuestKernel,
    patch: &Path,
    _progress: &dyn Fn(&str),
) -> Result<Rebuilt, LabError> {
    Err(LabError::new(
        "patch",
        format!(
            "{}: module rebuilds are not implemented yet",
            patch.display()
        ),
    ))
}
