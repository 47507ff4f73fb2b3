//! Files the user names as inputs: regular files of bounded size, refused in one line
//! naming the file otherwise. The rule itself is [`sim::fsutil`] (the model reads
//! scenarios, programs and pcaps too); this adds the path and the CLI's error type.

use std::fs::File;
use std::path::Path;

use crate::cli_error::CliError;

pub use sim::fsutil::UNBOUNDED;

/// Traces given to `skbsim diff` (and goldens read for comparison). Both sides are held
/// in memory with their parsed lines, a few times their size; the largest golden is
/// about 260 KiB and a million-frame replay traces to roughly 200 MiB, so 1 GiB per side
/// leaves room for long runs while bounding memory.
pub const MAX_TRACE_BYTES: u64 = 1 << 30;

fn cli(path: &Path) -> impl FnOnce(std::io::Error) -> CliError + '_ {
    move |e| CliError(format!("{}: {e}", path.display()))
}

/// Open `path` for reading as `what` ("XDP program", "trace", "pcap", "scenario"):
/// refuse FIFOs, sockets, char/block devices, directories with a one-line CliError naming
/// the file and its kind; refuse regular files larger than `max_bytes` naming the limit
/// ([`UNBOUNDED`] for none). Never blocks (see [`sim::fsutil::open_regular`]).
pub fn open_regular(path: &Path, what: &str, max_bytes: u64) -> Result<File, CliError> {
    sim::fsutil::open_regular(path, what, max_bytes).map_err(cli(path))
}

/// The bytes of a regular file of at most `max_bytes`.
pub fn read_regular(path: &Path, what: &str, max_bytes: u64) -> Result<Vec<u8>, CliError> {
    sim::fsutil::read_bounded(path, what, max_bytes).map_err(cli(path))
}

/// [`read_regular`] as UTF-8 text.
pub fn read_regular_to_string(path: &Path, what: &str, max_bytes: u64) -> Result<String, CliError> {
    sim::fsutil::read_bounded_to_string(path, what, max_bytes).map_err(cli(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_file_first() {
        let e = read_regular(Path::new("/dev/zero"), "trace", MAX_TRACE_BYTES).unwrap_err();
        assert_eq!(
            e.0,
            "/dev/zero: trace is a character device, not a regular file"
        );
    }
}
