//! Starting the program under the filter and the supervisor beside it.
//!
//! The supervisor runs on its own thread from before the fork: between installing the
//! filter and exec the child may already make an intercepted syscall (std writes a
//! failed exec's errno to a pipe), which must be answered while `Command::spawn` waits.

use std::io::{self, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::process::Command;
use std::thread;

use rustix::net::{
    recvmsg, socketpair, AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags,
    SocketFlags, SocketType,
};

use crate::supervisor::Supervisor;
use crate::{filter, sys, ExecError, ExitCode, SimTun};

pub fn run<T: SimTun + Send + 'static>(
    tun: T,
    mut cmd: Command,
) -> Result<(ExitCode, T), ExecError> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let (ours, theirs) = socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|e| ExecError::Supervisor(format!("socketpair: {e}")))?;
    sys::on_exec_install(&mut cmd, filter::program(&filter::intercepted()), theirs);
    let supervisor = thread::spawn(move || -> Result<Option<T>, String> {
        let Some(listener) =
            receive_listener(&ours).map_err(|e| format!("receiving the seccomp listener: {e}"))?
        else {
            return Ok(None);
        };
        Supervisor::new(tun, listener).serve().map(Some)
    });
    let spawned = cmd.spawn();
    // The child's end of the socketpair lives in `cmd`'s pre_exec closure: closing it
    // here lets the supervisor see EOF when the child never sent a listener.
    drop(cmd);
    let status = match spawned {
        Ok(mut child) => Ok(child.wait()),
        Err(e) => Err(e),
    };
    let joined = supervisor
        .join()
        .map_err(|_| ExecError::Supervisor("the supervisor thread panicked".into()))?
        .map_err(ExecError::Supervisor)?;
    match (status, joined) {
        (Ok(Ok(status)), Some(tun)) => Ok((exit_code(status), tun)),
        (Ok(Err(e)), _) => Err(ExecError::Supervisor(format!("waitpid: {e}"))),
        (Ok(Ok(_)), None) => Err(ExecError::Supervisor(
            "the program started without sending its seccomp listener".into(),
        )),
        (Err(e), None) => Err(ExecError::Unsupervisable(format!(
            "cannot supervise {program}: seccomp user notification is unavailable \
             (seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER): {e})"
        ))),
        (Err(e), Some(_)) => Err(ExecError::Spawn(format!("cannot run {program}: {e}"))),
    }
}

/// The listener the child sent, or None when the child closed its end without sending one
/// (its pre_exec failed).
fn receive_listener(sock: &OwnedFd) -> io::Result<Option<OwnedFd>> {
    let mut byte = [0u8; 1];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let msg = loop {
        match recvmsg(
            sock,
            &mut [IoSliceMut::new(&mut byte)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        ) {
            Err(rustix::io::Errno::INTR) => continue,
            r => break r?,
        }
    };
    if msg.bytes == 0 {
        return Ok(None);
    }
    for m in control.drain() {
        if let RecvAncillaryMessage::ScmRights(mut fds) = m {
            if let Some(fd) = fds.next() {
                return Ok(Some(fd));
            }
        }
    }
    Ok(None)
}

fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(sig)) => 128 + sig,
        (None, None) => 1,
    }
}
