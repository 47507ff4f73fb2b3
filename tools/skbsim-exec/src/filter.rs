//! The seccomp filter the program runs under: classic BPF over `struct seccomp_data`
//! (kernel/seccomp.c: seccomp_run_filters). It is eight syscall numbers compared in a row,
//! so it is assembled here rather than through libseccomp (a C library and a Debian
//! package for nine instructions) or seccompiler (no SECCOMP_RET_USER_NOTIF action).

/// AUDIT_ARCH_X86_64 (include/uapi/linux/audit.h): EM_X86_64 | __AUDIT_ARCH_64BIT |
/// __AUDIT_ARCH_LE.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e;
/// AUDIT_ARCH_AARCH64.
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7;

/// x32 syscalls on x86_64 carry this bit in `nr` under the same AUDIT_ARCH.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// The syscalls the supervisor sees: opens (to find /dev/net/tun), ioctl, the read and
/// write family on the device's fds, fcntl (O_NONBLOCK), sendto/sendmsg (rtnetlink
/// requests naming a simulated device: src/rtnl.rs) and recvfrom/recvmsg (their answers:
/// src/rtnl_answer.rs). Everything else runs untouched.
pub fn intercepted() -> Vec<i64> {
    let mut nrs = vec![
        libc::SYS_openat,
        libc::SYS_openat2,
        libc::SYS_ioctl,
        libc::SYS_read,
        libc::SYS_readv,
        libc::SYS_write,
        libc::SYS_writev,
        libc::SYS_fcntl,
        libc::SYS_sendto,
        libc::SYS_sendmsg,
        libc::SYS_recvfrom,
        libc::SYS_recvmsg,
    ];
    #[cfg(target_arch = "x86_64")]
    nrs.push(libc::SYS_open);
    nrs
}

fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

/// The program: another architecture's or an x32 syscall is allowed (not supervised:
/// docs/exec.md), each of `nrs` is SECCOMP_RET_USER_NOTIF, the rest SECCOMP_RET_ALLOW.
pub fn program(nrs: &[i64]) -> Vec<libc::sock_filter> {
    use libc::{BPF_ABS, BPF_JEQ, BPF_JGE, BPF_JMP, BPF_K, BPF_LD, BPF_RET, BPF_W};
    // offsetof(struct seccomp_data, nr) = 0, arch = 4.
    let n = nrs.len();
    assert!(n < 250, "a jump offset is one byte");
    let mut p = vec![
        stmt(BPF_LD | BPF_W | BPF_ABS, 4),
        jump(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH, 1, 0),
        stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_ALLOW),
        stmt(BPF_LD | BPF_W | BPF_ABS, 0),
        jump(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, n as u8, 0),
    ];
    for (i, &nr) in nrs.iter().enumerate() {
        // To the SECCOMP_RET_USER_NOTIF after the n - 1 - i compares left and the ALLOW.
        p.push(jump(BPF_JMP | BPF_JEQ | BPF_K, nr as u32, (n - i) as u8, 0));
    }
    p.push(stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_ALLOW));
    p.push(stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_USER_NOTIF));
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A classic-BPF interpreter for the instructions `program` uses, over (arch, nr).
    fn run(p: &[libc::sock_filter], arch: u32, nr: u32) -> u32 {
        let mut pc = 0;
        let mut a = 0u32;
        loop {
            let i = p[pc];
            let code = u32::from(i.code);
            match code {
                c if c == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS => {
                    a = if i.k == 4 { arch } else { nr };
                    pc += 1;
                }
                c if c == libc::BPF_RET | libc::BPF_K => return i.k,
                c if c == libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K => {
                    pc += 1 + usize::from(if a == i.k { i.jt } else { i.jf });
                }
                c if c == libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K => {
                    pc += 1 + usize::from(if a >= i.k { i.jt } else { i.jf });
                }
                _ => panic!("unexpected instruction {code:#x}"),
            }
        }
    }

    #[test]
    fn notifies_exactly_the_listed_syscalls() {
        let nrs = intercepted();
        let p = program(&nrs);
        for nr in 0..460u32 {
            let want = if nrs.contains(&i64::from(nr)) {
                libc::SECCOMP_RET_USER_NOTIF
            } else {
                libc::SECCOMP_RET_ALLOW
            };
            assert_eq!(run(&p, AUDIT_ARCH, nr), want, "syscall {nr}");
        }
        let first = nrs[0] as u32;
        assert_eq!(run(&p, 0x4000_0003, first), libc::SECCOMP_RET_ALLOW);
        assert_eq!(
            run(&p, AUDIT_ARCH, first | X32_SYSCALL_BIT),
            libc::SECCOMP_RET_ALLOW
        );
    }
}
