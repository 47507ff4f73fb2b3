//! Issue 21 item 3: one `Errno`. The real-kernel crate's errno is the model's type, and its
//! numbers are the host C library's (checked against `libc`, not against the table itself).

use skbsim_kernel::{Errno, OsErrno};

#[test]
fn the_kernel_errno_is_the_model_errno() {
    // Fails to compile while skbsim-kernel has its own Errno type.
    let real: sim::errno::Errno = skbsim_kernel::Errno::EAGAIN;
    let model = sim::errno::Errno::EAGAIN;
    assert_eq!(real, model);
}

#[test]
fn named_numbers_match_the_c_library() {
    let expected = [
        (Errno::EPERM, libc::EPERM),
        (Errno::ENOENT, libc::ENOENT),
        (Errno::EIO, libc::EIO),
        (Errno::ENXIO, libc::ENXIO),
        (Errno::EBADF, libc::EBADF),
        (Errno::EAGAIN, libc::EAGAIN),
        (Errno::ENOMEM, libc::ENOMEM),
        (Errno::EFAULT, libc::EFAULT),
        (Errno::EBUSY, libc::EBUSY),
        (Errno::EEXIST, libc::EEXIST),
        (Errno::ENODEV, libc::ENODEV),
        (Errno::EINVAL, libc::EINVAL),
        (Errno::ENFILE, libc::ENFILE),
        (Errno::ENOSPC, libc::ENOSPC),
        (Errno::EOVERFLOW, libc::EOVERFLOW),
        (Errno::EBADFD, libc::EBADFD),
        (Errno::EMSGSIZE, libc::EMSGSIZE),
        (Errno::EOPNOTSUPP, libc::EOPNOTSUPP),
        (Errno::ENOTSUP, libc::ENOTSUP),
        (Errno::ENETDOWN, libc::ENETDOWN),
        (Errno::ENOTTY, libc::ENOTTY),
        (Errno::ENOBUFS, libc::ENOBUFS),
        (Errno::EADDRINUSE, libc::EADDRINUSE),
        (Errno::ERFKILL, libc::ERFKILL),
    ];
    for (errno, code) in expected {
        assert_eq!(errno.code(), code, "{errno}");
        assert_eq!(Errno::from_raw(code), errno, "{code}");
    }
}

#[test]
fn an_unnamed_number_is_kept() {
    let e = Errno::from_raw(libc::EHWPOISON);
    assert_eq!(e, Errno::Other(libc::EHWPOISON));
    assert_eq!(e.code(), libc::EHWPOISON);
    assert_eq!(Errno::from_code(libc::EHWPOISON), None);
    assert_eq!(Errno::EINVAL.describe(), "Invalid argument (EINVAL)");
}
