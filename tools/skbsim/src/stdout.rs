//! Everything the commands print on standard output goes through here ([`outln!`] for
//! lines, [`Stdout`] for the `-` of `-o -`, `--trace -`, `--json`), so every command ends
//! the same way when its stdout fails. Rust ignores SIGPIPE, so `println!` panics with
//! a backtrace (exit 101) when the reader has gone (`skbsim run | head -1`) or the disk
//! is full (`> /dev/full`); here a write error is a [`CliError`] instead:
//!
//! - the reader has gone (EPIPE): [`closed`] turns true and `main` exits quietly with
//!   [`CLOSED_EXIT`], the status a shell shows for a tool that SIGPIPE ended (`yes |
//!   head -1`), so `set -o pipefail` still sees that the output was cut short;
//! - anything else (ENOSPC, EIO): one line, `skbsim: stdout: cannot write: No space left
//!   on device`, exit 2.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::cli_error::CliError;

/// The exit status when stdout's reader has gone: 128 + SIGPIPE.
pub const CLOSED_EXIT: u8 = 141;

/// Set once a write to stdout met EPIPE.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether stdout's reader has gone: the command should end quietly.
pub fn closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}

/// Note EPIPE in `r` (see [`closed`]) and pass it on.
fn noted<T>(r: io::Result<T>) -> io::Result<T> {
    if let Err(e) = &r {
        if e.kind() == io::ErrorKind::BrokenPipe {
            CLOSED.store(true, Ordering::Relaxed);
        }
    }
    r
}

/// A write error on stdout as the one-line CLI error (the words of the error only, no
/// "(os error 28)").
pub fn cannot_write(e: &io::Error) -> CliError {
    let words = match e.raw_os_error() {
        Some(n) => skbsim_kernel::OsErrno::description(skbsim_kernel::Errno::from_raw(n)),
        None => e.to_string(),
    };
    CliError(format!("stdout: cannot write: {words}"))
}

/// Write `args` to stdout (what [`out!`] expands to).
pub fn write(args: fmt::Arguments<'_>) -> Result<(), CliError> {
    noted(io::stdout().lock().write_fmt(args)).map_err(|e| cannot_write(&e))
}

/// Write `args` and a newline to stdout (what [`outln!`] expands to).
pub fn write_line(args: fmt::Arguments<'_>) -> Result<(), CliError> {
    let mut out = io::stdout().lock();
    noted(out.write_fmt(args).and_then(|()| out.write_all(b"\n"))).map_err(|e| cannot_write(&e))
}

/// Flush what stdout still holds (a line without its newline), before exiting.
pub fn flush() -> Result<(), CliError> {
    noted(io::stdout().lock().flush()).map_err(|e| cannot_write(&e))
}

/// `println!` that returns a [`CliError`] instead of panicking when stdout fails (see
/// the [module](crate::stdout)).
#[macro_export]
macro_rules! outln {
    () => {
        $crate::stdout::write_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::stdout::write_line(format_args!($($arg)*))
    };
}

/// `print!` that returns a [`CliError`] instead of panicking when stdout fails.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::stdout::write(format_args!($($arg)*))
    };
}

/// Standard output as a [`Write`] for outputs named `-`: EPIPE is noted ([`closed`]).
#[derive(Debug, Default)]
pub struct Stdout;

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        noted(io::stdout().write(buf))
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        noted(io::stdout().write_all(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        noted(io::stdout().flush())
    }
}
