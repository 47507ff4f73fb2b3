//! The skbsim command line as a library, so the integration tests drive exactly what the
//! binary runs.

pub mod bench;
pub mod cli_error;
pub mod conform;
pub mod diff;
pub mod engine;
pub mod exec_scenario;
pub mod exec_tap;
pub mod golden;
pub mod gro_real;
pub mod input;
pub mod output;
pub mod progress;
pub mod replay;
pub mod runner;
pub mod stdout;
pub mod suite;
