//! The errno values the modelled paths return, named as in include/uapi/asm-generic/errno*.h.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Errno {
    EPERM,
    ENOENT,
    E2BIG,
    EBADF,
    EBUSY,
    EEXIST,
    ENFILE,
    EIO,
    EAGAIN,
    ENOMEM,
    EFAULT,
    EINVAL,
    ENOSPC,
    ENXIO,
    EOVERFLOW,
    EBADFD,
    EMSGSIZE,
    EOPNOTSUPP,
    ENETDOWN,
    ENODEV,
    EADDRNOTAVAIL,
}

impl Errno {
    /// The x86_64 number.
    pub fn code(self) -> i32 {
        match self {
            Errno::EPERM => 1,
            Errno::ENOENT => 2,
            Errno::E2BIG => 7,
            Errno::EBADF => 9,
            Errno::EBUSY => 16,
            Errno::EEXIST => 17,
            Errno::ENFILE => 23,
            Errno::EIO => 5,
            Errno::ENXIO => 6,
            Errno::EAGAIN => 11,
            Errno::ENOMEM => 12,
            Errno::EFAULT => 14,
            Errno::EINVAL => 22,
            Errno::ENOSPC => 28,
            Errno::EOVERFLOW => 75,
            Errno::EBADFD => 77,
            Errno::EMSGSIZE => 90,
            Errno::EOPNOTSUPP => 95,
            Errno::ENETDOWN => 100,
            Errno::ENODEV => 19,
            Errno::EADDRNOTAVAIL => 99,
        }
    }

    /// The errno for an x86_64 number, if modelled.
    pub fn from_code(code: i32) -> Option<Errno> {
        [
            Errno::EPERM,
            Errno::ENOENT,
            Errno::E2BIG,
            Errno::EBADF,
            Errno::EBUSY,
            Errno::EEXIST,
            Errno::ENFILE,
            Errno::EIO,
            Errno::ENXIO,
            Errno::EAGAIN,
            Errno::ENOMEM,
            Errno::EFAULT,
            Errno::EINVAL,
            Errno::ENOSPC,
            Errno::EOVERFLOW,
            Errno::EBADFD,
            Errno::EMSGSIZE,
            Errno::EOPNOTSUPP,
            Errno::ENETDOWN,
            Errno::ENODEV,
            Errno::EADDRNOTAVAIL,
        ]
        .into_iter()
        .find(|e| e.code() == code)
    }

    pub fn name(self) -> &'static str {
        match self {
            Errno::EPERM => "EPERM",
            Errno::ENOENT => "ENOENT",
            Errno::E2BIG => "E2BIG",
            Errno::EBADF => "EBADF",
            Errno::EBUSY => "EBUSY",
            Errno::EEXIST => "EEXIST",
            Errno::ENFILE => "ENFILE",
            Errno::EIO => "EIO",
            Errno::ENXIO => "ENXIO",
            Errno::EAGAIN => "EAGAIN",
            Errno::ENOMEM => "ENOMEM",
            Errno::EFAULT => "EFAULT",
            Errno::EINVAL => "EINVAL",
            Errno::ENOSPC => "ENOSPC",
            Errno::EOVERFLOW => "EOVERFLOW",
            Errno::EBADFD => "EBADFD",
            Errno::EMSGSIZE => "EMSGSIZE",
            Errno::EOPNOTSUPP => "EOPNOTSUPP",
            Errno::ENETDOWN => "ENETDOWN",
            Errno::ENODEV => "ENODEV",
            Errno::EADDRNOTAVAIL => "EADDRNOTAVAIL",
        }
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
