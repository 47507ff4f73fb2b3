//! Errors: a raw errno that callers can match on, and [`KernelError`], which names the
//! operation that failed.

use std::fmt;

/// A raw `errno` value, kept as the kernel returned it.
///
/// Many tap results are errno values by design (`EINVAL` for a too-short read buffer,
/// `EAGAIN` on an empty non-blocking queue, `EIO` when the tap is down), so the read and
/// write paths return `Result<usize, Errno>` and let the caller decide what is a failure.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Errno(pub i32);

macro_rules! errno_consts {
    ($($name:ident),* $(,)?) => {
        impl Errno {
            $(
                #[doc = concat!("`", stringify!($name), "`")]
                pub const $name: Errno = Errno(libc::$name);
            )*

            /// The symbolic name (`"EINVAL"`), or `"E?"` for a value this table lacks.
            pub fn name(self) -> &'static str {
                $(
                    if self.0 == libc::$name {
                        return stringify!($name);
                    }
                )*
                "E?"
            }
        }
    };
}

errno_consts!(
    EPERM,
    ENOENT,
    ESRCH,
    EINTR,
    EIO,
    ENXIO,
    E2BIG,
    EBADF,
    EAGAIN,
    ENOMEM,
    EACCES,
    EFAULT,
    EBUSY,
    EEXIST,
    ENODEV,
    ENOTDIR,
    EINVAL,
    ENFILE,
    EMFILE,
    ENOTTY,
    ENOSPC,
    ERANGE,
    ENOSYS,
    ENODATA,
    ENOTSOCK,
    EDESTADDRREQ,
    EMSGSIZE,
    EPROTOTYPE,
    ENOPROTOOPT,
    EPROTONOSUPPORT,
    EOPNOTSUPP,
    EAFNOSUPPORT,
    EADDRINUSE,
    EADDRNOTAVAIL,
    ENETDOWN,
    ENETUNREACH,
    ENOBUFS,
    ENOTCONN,
    ETIMEDOUT,
    ECONNREFUSED,
    EALREADY,
    EINPROGRESS,
    ERFKILL,
);

impl Errno {
    /// `ENOTSUP` is the same value as `EOPNOTSUPP` on Linux; listed only for readability.
    pub const ENOTSUP: Errno = Errno(libc::ENOTSUP);

    /// The calling thread's current `errno`.
    pub fn last() -> Errno {
        Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }

    /// The C library's description ("Invalid argument").
    pub fn description(self) -> String {
        let text = std::io::Error::from_raw_os_error(self.0).to_string();
        // std renders "Invalid argument (os error 22)"; keep the words only.
        match text.rfind(" (os error ") {
            Some(at) => text[..at].to_string(),
            None => text,
        }
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name();
        if name == "E?" {
            write!(f, "{} (errno {})", self.description(), self.0)
        } else {
            write!(f, "{} ({name})", self.description())
        }
    }
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name();
        if name == "E?" {
            write!(f, "Errno({})", self.0)
        } else {
            f.write_str(name)
        }
    }
}

impl std::error::Error for Errno {}

impl From<rustix::io::Errno> for Errno {
    fn from(e: rustix::io::Errno) -> Errno {
        Errno(e.raw_os_error())
    }
}

impl From<&std::io::Error> for Errno {
    /// The raw errno of an OS error (`EIO` for an error that has none).
    fn from(e: &std::io::Error) -> Errno {
        Errno(e.raw_os_error().unwrap_or(libc::EIO))
    }
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
            } => write!(f, "{errno}"),
            Cause::Errno {
                errno,
                extack: Some(msg),
            } => write!(f, "{errno}: {msg}"),
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
        assert_eq!(Errno(9999).name(), "E?");
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
