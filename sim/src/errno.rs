//! The one errno type of skbsim: the values the modelled paths return and the values a real
//! kernel call answers with, named as in include/uapi/asm-generic/errno-base.h and
//! include/uapi/asm-generic/errno.h (the x86_64 numbers). The real-kernel crates re-use it
//! (`skbsim_kernel::Errno` is this type); a number this table lacks is kept as
//! [`Errno::Other`], so nothing the kernel answers is lost.

use std::fmt;

macro_rules! errnos {
    ($($name:ident = $code:literal),* $(,)?) => {
        /// An errno value. The named variants come first, in the order the model's totals
        /// have always sorted them (the derived `Ord`); `Other` holds any other number.
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Errno {
            $(
                #[doc = concat!("`", stringify!($name), "` (", stringify!($code), ")")]
                $name,
            )*
            /// A number without a name in this table, kept as the kernel returned it.
            Other(i32),
        }

        impl Errno {
            /// The x86_64 number.
            pub fn code(self) -> i32 {
                match self {
                    $(Errno::$name => $code,)*
                    Errno::Other(n) => n,
                }
            }

            /// The errno for any number: the named variant, or [`Errno::Other`].
            pub fn from_raw(code: i32) -> Errno {
                match code {
                    $($code => Errno::$name,)*
                    n => Errno::Other(n),
                }
            }

            /// The symbolic name (`"EINVAL"`), or `"E?"` for [`Errno::Other`].
            pub fn name(self) -> &'static str {
                match self {
                    $(Errno::$name => stringify!($name),)*
                    Errno::Other(_) => "E?",
                }
            }
        }
    };
}

errnos!(
    EPERM = 1,
    ENOENT = 2,
    E2BIG = 7,
    EBADF = 9,
    EBUSY = 16,
    EEXIST = 17,
    ENFILE = 23,
    EIO = 5,
    EAGAIN = 11,
    ENOMEM = 12,
    EFAULT = 14,
    EINVAL = 22,
    ENOSPC = 28,
    ENXIO = 6,
    EOVERFLOW = 75,
    EBADFD = 77,
    EMSGSIZE = 90,
    EOPNOTSUPP = 95,
    ENETDOWN = 100,
    ENODEV = 19,
    ESRCH = 3,
    EINTR = 4,
    EACCES = 13,
    ENOTDIR = 20,
    EMFILE = 24,
    ENOTTY = 25,
    ERANGE = 34,
    ENOSYS = 38,
    ENODATA = 61,
    ENOTSOCK = 88,
    EDESTADDRREQ = 89,
    EPROTOTYPE = 91,
    ENOPROTOOPT = 92,
    EPROTONOSUPPORT = 93,
    EAFNOSUPPORT = 97,
    EADDRINUSE = 98,
    EADDRNOTAVAIL = 99,
    ENETUNREACH = 101,
    ENOBUFS = 105,
    ENOTCONN = 107,
    ETIMEDOUT = 110,
    ECONNREFUSED = 111,
    EALREADY = 114,
    EINPROGRESS = 115,
    ERFKILL = 132,
);

impl Errno {
    /// `ENOTSUP` is the same number as `EOPNOTSUPP` on Linux; named only for readability.
    pub const ENOTSUP: Errno = Errno::EOPNOTSUPP;

    /// The errno for a number, if it has a name in this table.
    pub fn from_code(code: i32) -> Option<Errno> {
        match Errno::from_raw(code) {
            Errno::Other(_) => None,
            named => Some(named),
        }
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Errno::Other(n) => write!(f, "errno {n}"),
            named => f.write_str(named.name()),
        }
    }
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Errno::Other(n) => write!(f, "Errno({n})"),
            named => f.write_str(named.name()),
        }
    }
}

impl std::error::Error for Errno {}
