//! The network namespace a command runs in is not the command's to change: it is made in a user
//! namespace the command's own is a child of (and a launcher's spares lend it from one command
//! to the next), so even a command that is root in its user namespace cannot bring `lo` up or
//! down, nor add an address, with the network off or loopback-only, on a fresh helper or a
//! spare.

use toolsmith_sandbox::NetworkPolicy;

use super::launcher;
use crate::common::{PYTHON, caps, python, require, run};

/// Tries `SIOCSIFFLAGS` on `lo` (up, or down when it is up), then `SIOCSIFMTU` (1280): prints
/// each outcome (`changed` or the errno's name), then `lo`'s `IFF_UP` before and after and
/// whether its MTU is unchanged. The interface requests go through a Unix socket, which every policy
/// lets a command open (the kernel takes them on any socket).
const RECONFIGURE: &str = "\
import errno, fcntl, socket, struct
s = socket.socketpair()[0]
def flags():
    return struct.unpack('16sH14x', fcntl.ioctl(s, 0x8913, struct.pack('16sH14x', b'lo', 0)))[1]
def attempt(request, payload):
    try:
        fcntl.ioctl(s, request, payload)
        print('changed')
    except OSError as e:
        print(errno.errorcode.get(e.errno, e.errno))
before = flags()
attempt(0x8914, struct.pack('16sH14x', b'lo', before ^ 1))
attempt(0x8922, struct.pack('16si12x', b'lo', 1280))
mtu = struct.unpack('16si12x', fcntl.ioctl(s, 0x8921, struct.pack('16si12x', b'lo', 0)))[1]
print(before & 1, flags() & 1, mtu != 1280)
";

#[tokio::test]
async fn a_command_cannot_reconfigure_the_network_namespace_it_runs_in() {
    if !require(
        "network namespaces",
        caps().net_namespaces && caps().user_namespaces,
    ) || !python()
    {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    for (network, up) in [
        (NetworkPolicy::Off, "0"),
        (NetworkPolicy::LoopbackOnly, "1"),
    ] {
        let l = launcher(root.path(), |p| p.network = network);
        // The first launch's helper is a fresh one; the later ones are spares, in network
        // namespaces lent again once their launch was over.
        for round in 0..4 {
            let out = run(&l, PYTHON, &["-c", RECONFIGURE]).await;
            let lines: Vec<&str> = out.stdout.lines().collect();
            assert_eq!(
                lines,
                ["EPERM", "EPERM", &format!("{up} {up} True")],
                "{network:?}, round {round}: {out:?}"
            );
        }
    }
}
