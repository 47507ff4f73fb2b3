//! Errors: the errno callers match on (the model's `sim::errno::Errno`), and [`KernelError`], which names the
//! operation that failed.

use std::fmt;

pub use sim::errno::Errno;

/// What only the host can say about an errno: the calling thread's current one and the C
/// library's description. The type itself is the model's (`sim::errno::Errno`), so a real
/// arm's errno and the model's compare directly.
pub trait OsErrno {
    /// The calling thread's current `errno`.
    fn last() -> Errno;
    /// The C library's description ("Invalid argument").
    fn description(self) -> String;
    /// `"Invalid argument (EINVAL)"`, or `"... (errno N)"` for a number without a name.
    fn describe(self) -> String;
}

impl OsErrno for Errno {
    fn last() -> Errno {
        Errno::from_raw(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }

    fn description(self) -> String {
        let text = std::io::Error::from_raw_os_error(self.code()).to_string();
        // std renders "Invalid argument (os error 22)"; keep the words only.
        match text.rfind(" (os error ") {
            Some(at) => text[..at].to_string(),
            None => text,
        }
    }

    fn describe(self) -> String {
        match self {
            Errno::Other(n) => format!("{} (errno {n})", self.description()),
            named => format!("{} ({})", self.description(), named.name()),
        }
    }
}

/// The errno of a rustix call.
pub fn from_rustix(e: rustix::io::Errno) -> Errno {
    Errno::from_raw(e.raw_os_error())
}

/// The raw errno of an OS error (`EIO` for an error that has none).
pub fn from_io(e: &std::io::Error) -> Errno {
    Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO))
}

/// Why an operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// The kernel answered with an errno; `extack` is the netlink extended-ack message, when
    /// the kernel sent one.
    Errno {
        /// The raw errno.
        errno: Errno,
        /// Netlink extended ack text (`NLMSGERR_ATTR_MSG`), if any.
        extack: Option<String>,
    },
    /// The closure given to [`crate::Netns::run`] panicked; the panic message.
    Panicked(String),
    /// Something looked up by name does not exist (an ethtool feature string, a link).
    NotFound(String),
    /// The kernel's answer could not be parsed, or did not have the expected shape.
    Protocol(String),
    /// `ETHTOOL_SFEATURES` was accepted but the feature did not end up as asked.
    FeatureNotApplied {
        /// The value asked for.
        wanted: bool,
        /// The value the device reports afterwards.
        active: bool,
        /// The ioctl's return value: `ETHTOOL_F_UNSUPPORTED` (1), `ETHTOOL_F_WISH` (2),
        /// `ETHTOOL_F_COMPAT` (4).
        ethtool_flags: u32,
    },
    /// The crate refused to act because it would touch the host's network namespace.
    Refused(String),
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cause::Errno {
                errno,
                extack: None,
            } => write!(f, "{}", errno.describe()),
            Cause::Errno {
                errno,
                extack: Some(msg),
            } => write!(f, "{}: {msg}", errno.describe()),
            Cause::Panicked(msg) => write!(f, "panicked: {msg}"),
            Cause::NotFound(what) => write!(f, "not found: {what}"),
            Cause::Protocol(what) => write!(f, "unexpected kernel reply: {what}"),
            Cause::FeatureNotApplied {
                wanted,
                active,
                ethtool_flags,
            } => {
                write!(
                    f,
                    "feature not applied: wanted {}, active {}",
                    on_off(*wanted),
                    on_off(*active)
                )?;
                if *ethtool_flags != 0 {
                    write!(f, " (ETHTOOL_SFEATURES returned {ethtool_flags:#x}")?;
                    for (bit, name) in [(1, "UNSUPPORTED"), (2, "WISH"), (4, "COMPAT")] {
                        if ethtool_flags & bit != 0 {
                            write!(f, " {name}")?;
                        }
                    }
                    write!(f, ")")?;
                }
                Ok(())
            }
            Cause::Refused(why) => write!(f, "refused: {why}"),
        }
    }
}

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// A failed kernel operation: `op` names it ("TUNSETIFF on skb0"), `cause` says why.
///
/// Displays as `TUNSETIFF on skb0: Invalid argument (EINVAL)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelError {
    /// The operation, with its object: "TUNSETIFF on skb0", "RTM_NEWLINK bridge skbbr0".
    pub op: String,
    /// What went wrong.
    pub cause: Cause,
}

impl KernelError {
    /// An errno failure of `op`.
    pub fn sys(op: impl Into<String>, errno: Errno) -> Self {
        KernelError {
            op: op.into(),
            cause: Cause::Errno {
                errno,
                extack: None,
            },
        }
    }

    /// `op` failed with the calling thread's current errno.
    pub fn last(op: impl Into<String>) -> Self {
        Self::sys(op, Errno::last())
    }

    /// A failure with an explicit cause.
    pub fn new(op: impl Into<String>, cause: Cause) -> Self {
        KernelError {
            op: op.into(),
            cause,
        }
    }

    /// The errno, when the cause is one.
    pub fn errno(&self) -> Option<Errno> {
        match &self.cause {
            Cause::Errno { errno, .. } => Some(*errno),
            _ => None,
        }
    }

    /// Whether the failure was this errno.
    pub fn is_errno(&self, errno: Errno) -> bool {
        self.errno() == Some(errno)
    }
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.op, self.cause)
    }
}

impl std::error::Error for KernelError {}

/// Attach an operation name to an errno result.
pub(crate) trait ErrnoExt<T> {
    fn op(self, op: impl FnOnce() -> String) -> Result<T, KernelError>;
}

impl<T> ErrnoExt<T> for Result<T, Errno> {
    fn op(self, op: impl FnOnce() -> String) -> Result<T, KernelError> {
        self.map_err(|e| KernelError::sys(op(), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_the_op_and_the_errno() {
        let e = KernelError::sys("TUNSETIFF on skb0", Errno::EINVAL);
        assert_eq!(
            e.to_string(),
            "TUNSETIFF on skb0: Invalid argument (EINVAL)"
        );
        assert_eq!(format!("{:?}", Errno::EAGAIN), "EAGAIN");
        assert_eq!(Errno::from_raw(9999).name(), "E?");
        let e = KernelError::new(
            "RTM_NEWLINK bridge br0",
            Cause::Errno {
                errno: Errno::EEXIST,
                extack: Some("already exists".into()),
            },
        );
        assert_eq!(
            e.to_string(),
            "RTM_NEWLINK bridge br0: File exists (EEXIST): already exists"
        );
        let e = KernelError::new(
            "ETHTOOL_SFEATURES x=on on t0",
            Cause::FeatureNotApplied {
                wanted: true,
                active: false,
                ethtool_flags: 1,
            },
        );
        assert_eq!(
            e.to_string(),
            "ETHTOOL_SFEATURES x=on on t0: feature not applied: wanted on, active off \
             (ETHTOOL_SFEATURES returned 0x1 UNSUPPORTED)"
        );
    }
}
