//! `skbsim lab diff` (placeholder).
use std::process::ExitCode;

use clap::Args;
use skbsim::cli_error::CliError;

#[derive(Debug, Args)]
pub struct LabDiffArgs {}

pub(super) fn diff(_a: &LabDiffArgs) -> Result<ExitCode, CliError> {
    Err(CliError("lab diff: not implemented yet".into()))
}
