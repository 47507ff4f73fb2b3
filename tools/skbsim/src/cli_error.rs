//! One error type for the command line: a one-line message and an exit code.

use std::fmt;

/// Bad input or a failure to run: exit code 2.
#[derive(Debug)]
pub struct CliError(pub String);

impl CliError {
    pub fn exit_code(&self) -> u8 {
        2
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

macro_rules! from_display {
    ($($t:ty),*) => {$(
        impl From<$t> for CliError {
            fn from(e: $t) -> Self {
                CliError(e.to_string())
            }
        }
    )*};
}

from_display!(sim::scenario::ScenarioError, sim::pcap::PcapError);

/// What cannot fail (an in-memory source, a consumer that keeps nothing) as a CliError.
impl From<std::convert::Infallible> for CliError {
    fn from(e: std::convert::Infallible) -> Self {
        match e {}
    }
}
