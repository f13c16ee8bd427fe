//! Loopback-only network: the host's loopback services are reachable from a sandboxed command,
//! through the launcher's `connect` supervisor; the host's other addresses, UDP, and listeners
//! the command opens stay inside its private network namespace; a sockaddr rewritten by a
//! second thread while the supervisor decides reaches nothing but loopback.

use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use toolsmith_sandbox::exec::{ExecRequest, Launcher};
use toolsmith_sandbox::{Capabilities, NetworkPolicy, SandboxPolicy};

use crate::common::{PYTHON, caps, helper, python, require, run};

fn launcher_with(root: &Path, caps: Capabilities) -> Launcher {
    let mut policy = SandboxPolicy::new(root.canonicalize().unwrap());
    policy.limits.timeout = Duration::from_secs(20);
    policy.network = NetworkPolicy::LoopbackOnly;
    Launcher::with_capabilities(helper(), policy, caps)
}

/// A loopback-only launcher, when this machine can mediate (else the skip line is printed).
fn mediated(root: &Path) -> Option<Launcher> {
    let c = caps();
    require(
        "loopback mediation (network namespace + seccomp user notification)",
        c.net_namespaces && c.seccomp && c.seccomp_listener,
    )
    .then(|| launcher_with(root, c.clone()))
}

/// A server on `addr` that answers each line with `pong:<line>` and records the local address
/// each connection arrived on.
fn echo_server(addr: &str) -> (SocketAddr, Arc<Mutex<Vec<SocketAddr>>>) {
    let listener = TcpListener::bind(addr).unwrap();
    let local = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            record.lock().unwrap().push(stream.local_addr().unwrap());
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).is_ok() && !line.is_empty() {
                    let _ = (&stream).write_all(format!("pong:{line}").as_bytes());
                }
            });
        }
    });
    (local, seen)
}

/// One of this machine's IPv4 addresses that is not loopback (`ip -4 -o addr`).
fn outside_address() -> Option<Ipv4Addr> {
    let out = std::process::Command::new("ip")
        .args(["-4", "-o", "addr", "show"])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(3)?.split('/').next()?.parse().ok())
        .find(|ip: &Ipv4Addr| !ip.is_loopback())
}

#[tokio::test]
async fn host_loopback_servers_are_reachable_and_data_round_trips() {
    let root = tempfile::tempdir().unwrap();
    let Some(l) = mediated(root.path()) else {
        return;
    };
    let (v4, _) = echo_server("127.0.0.1:0");
    // Blocking sockets (bash's /dev/tcp): the supervisor waits for the handshake.
    let script = format!(
        "exec 3<>/dev/tcp/127.0.0.1/{port} && printf 'ping\\n' >&3 && read -r line <&3 && \
         echo \"got $line\"",
        port = v4.port()
    );
    let out = run(&l, "bash", &["-c", &script]).await;
    assert_eq!(out.stdout, "got pong:ping\n", "{out:?}");
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    if !python() {
        eprintln!("SKIPPED localhost and ::1 round trips: {PYTHON} is not installed");
        return;
    }
    // Non-blocking sockets (Python's timeouts): EINPROGRESS, then the substituted socket.
    let v6 = TcpListener::bind("[::1]:0")
        .is_ok()
        .then(|| echo_server("[::1]:0").0);
    let script = format!(
        "import socket\n\
         def ask(host, port):\n\
         \x20s = socket.create_connection((host, port), timeout=5)\n\
         \x20s.sendall(b'ping\\n'); print(host, s.makefile().readline().strip())\n\
         ask('localhost', {v4})\n\
         ask('127.0.0.1', {v4})\n\
         if {v6}: ask('::1', {v6})\n",
        v4 = v4.port(),
        v6 = v6.map_or(0, |a| a.port()),
    );
    let out = run(&l, PYTHON, &["-c", &script]).await;
    assert!(out.stdout.contains("localhost pong:ping\n"), "{out:?}");
    assert!(out.stdout.contains("127.0.0.1 pong:ping\n"), "{out:?}");
    match v6 {
        Some(_) => assert!(out.stdout.contains("::1 pong:ping\n"), "{out:?}"),
        None => eprintln!("SKIPPED the ::1 round trip: this host has no IPv6 loopback"),
    }
}

#[tokio::test]
async fn the_hosts_other_addresses_and_udp_stay_unreachable() {
    let root = tempfile::tempdir().unwrap();
    let Some(l) = mediated(root.path()) else {
        return;
    };
    if !python() {
        return;
    }
    let Some(outside) = outside_address() else {
        eprintln!("SKIPPED non-loopback reachability: this machine has no non-loopback IPv4");
        return;
    };
    let (server, seen) = echo_server("0.0.0.0:0");
    let udp = UdpSocket::bind("0.0.0.0:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let script = format!(
        "import socket\n\
         for host in ('127.0.0.1', '{outside}'):\n\
         \x20try:\n\
         \x20\x20s = socket.create_connection((host, {tcp}), timeout=3); print('TCP', host)\n\
         \x20except Exception as e: print('no tcp', host, e)\n\
         for host in ('127.0.0.1', '{outside}'):\n\
         \x20try:\n\
         \x20\x20u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
         \x20\x20u.sendto(b'leak', (host, {udp})); print('UDP', host)\n\
         \x20except Exception as e: print('no udp', host, e)\n",
        tcp = server.port(),
        udp = udp.local_addr().unwrap().port(),
    );
    let out = run(&l, PYTHON, &["-c", &script]).await;
    // Positive control: the host's loopback is reachable in this run.
    assert!(out.stdout.contains("TCP 127.0.0.1\n"), "{out:?}");
    assert!(!out.stdout.contains(&format!("TCP {outside}")), "{out:?}");
    assert!(out.stdout.contains(&format!("no udp {outside}")), "{out:?}");
    let arrived: Vec<IpAddr> = seen.lock().unwrap().iter().map(|a| a.ip()).collect();
    assert_eq!(arrived, [IpAddr::from(Ipv4Addr::LOCALHOST)], "{arrived:?}");
    let mut buf = [0u8; 16];
    assert!(udp.recv(&mut buf).is_err(), "a datagram reached the host");
}

#[tokio::test]
async fn listeners_the_command_opens_are_not_on_the_host() {
    let root = tempfile::tempdir().unwrap();
    let Some(l) = mediated(root.path()) else {
        return;
    };
    if !python() {
        return;
    }
    let (server, _) = echo_server("127.0.0.1:0");
    // The command binds 0.0.0.0 and listens without binding (autobind to INADDR_ANY), reaches
    // the host's loopback server, says which ports it holds, and waits for `done`.
    let script = format!(
        "import socket, os, time\n\
         a = socket.socket(); a.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n\
         a.bind(('0.0.0.0', 0)); a.listen(5)\n\
         b = socket.socket(); b.listen(5)\n\
         c = socket.create_connection(('127.0.0.1', {port}), timeout=3)\n\
         c.sendall(b'x\\n'); reply = c.makefile().readline().strip()\n\
         open('ports.tmp', 'w').write('%d %d %s' % (a.getsockname()[1], b.getsockname()[1], reply))\n\
         os.rename('ports.tmp', 'ports')\n\
         while not os.path.exists('done'): time.sleep(0.02)\n",
        port = server.port()
    );
    let request = ExecRequest::new(
        PYTHON,
        vec!["-c".into(), script],
        root.path().canonicalize().unwrap(),
    );
    let runner = l.clone();
    let running = tokio::spawn(async move { runner.run(&request).await });
    let ports_file = root.path().join("ports");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ports_file.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ports = std::fs::read_to_string(&ports_file).unwrap_or_default();
    let fields: Vec<&str> = ports.split_whitespace().collect();
    let mut hosts = vec![IpAddr::from(Ipv4Addr::LOCALHOST)];
    hosts.extend(outside_address().map(IpAddr::from));
    let reached: Vec<String> = fields
        .iter()
        .take(2)
        .filter_map(|p| p.parse::<u16>().ok())
        .flat_map(|port| hosts.iter().map(move |ip| SocketAddr::new(*ip, port)))
        .filter(|addr| TcpStream::connect_timeout(addr, Duration::from_millis(500)).is_ok())
        .map(|addr| addr.to_string())
        .collect();
    std::fs::write(root.path().join("done"), "").unwrap();
    let out = running.await.unwrap().unwrap();
    assert_eq!(fields.len(), 3, "{ports:?} {out:?}");
    assert_eq!(
        fields[2], "pong:x",
        "the host's loopback was reached: {out:?}"
    );
    assert!(
        reached.is_empty(),
        "the command's listeners are on the host: {reached:?}"
    );
}

#[tokio::test]
async fn a_sockaddr_rewritten_during_the_decision_reaches_only_loopback() {
    let root = tempfile::tempdir().unwrap();
    let Some(l) = mediated(root.path()) else {
        return;
    };
    if !python() {
        return;
    }
    let Some(outside) = outside_address() else {
        eprintln!("SKIPPED the rewritten sockaddr: this machine has no non-loopback IPv4");
        return;
    };
    let (server, seen) = echo_server("0.0.0.0:0");
    // One sockaddr_in, its address flipped between 127.0.0.1 and the outside address by a
    // second thread while the main thread connects with it, 300 times.
    let script = format!(
        "import ctypes, socket, struct, threading\n\
         libc = ctypes.CDLL(None, use_errno=True)\n\
         def sin(ip): return struct.pack('=H', socket.AF_INET) + struct.pack('!H', {port}) + \
         socket.inet_aton(ip) + bytes(8)\n\
         inside, outside = sin('127.0.0.1'), sin('{outside}')\n\
         buf = ctypes.create_string_buffer(inside, 16)\n\
         stop = False\n\
         def flip():\n\
         \x20while not stop:\n\
         \x20\x20ctypes.memmove(buf, outside, 16); ctypes.memmove(buf, inside, 16)\n\
         t = threading.Thread(target=flip); t.start()\n\
         ok = 0\n\
         for _ in range(300):\n\
         \x20s = socket.socket()\n\
         \x20if libc.connect(s.fileno(), buf, 16) == 0: ok += 1\n\
         \x20s.close()\n\
         stop = True; t.join()\n\
         print('connected', ok)\n",
        port = server.port()
    );
    let out = run(&l, PYTHON, &["-c", &script]).await;
    let connected: usize = out
        .stdout
        .strip_prefix("connected ")
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no count of connections: {out:?}"));
    // Every connect that succeeded is in the server's backlog; wait (bounded) until its accept
    // loop has recorded them all. A fixed 200 ms wait once fell short on a loaded machine.
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen.lock().unwrap().len() < connected && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let arrived = seen.lock().unwrap().clone();
    assert!(
        !arrived.is_empty(),
        "no connect reached the host's loopback: {out:?}"
    );
    let leaked: Vec<&SocketAddr> = arrived.iter().filter(|a| !a.ip().is_loopback()).collect();
    assert!(leaked.is_empty(), "reached through {leaked:?}");
}

#[tokio::test]
async fn the_sandboxs_own_servers_stay_its_own() {
    let root = tempfile::tempdir().unwrap();
    let Some(l) = mediated(root.path()) else {
        return;
    };
    if !python() {
        return;
    }
    // The same port on the host's loopback: the command must reach its own server, not this.
    let (host, seen) = echo_server("127.0.0.1:0");
    let script = format!(
        "import socket\n\
         srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n\
         srv.bind(('127.0.0.1', {port})); srv.listen(1)\n\
         c = socket.create_connection(('127.0.0.1', {port}), timeout=3)\n\
         peer, _ = srv.accept(); c.sendall(b'own'); print(peer.recv(3).decode())\n",
        port = host.port()
    );
    let out = run(&l, PYTHON, &["-c", &script]).await;
    assert_eq!(out.stdout, "own\n", "{out:?}");
    assert!(
        seen.lock().unwrap().is_empty(),
        "the host's server was reached"
    );
}

#[tokio::test]
async fn without_user_notification_the_host_loopback_is_unreachable_and_the_run_says_so() {
    let root = tempfile::tempdir().unwrap();
    if !require("loopback-only network namespace", caps().net_namespaces) {
        return;
    }
    let mut degraded = caps().clone();
    degraded.seccomp_listener = false;
    let l = launcher_with(root.path(), degraded);
    let (server, seen) = echo_server("127.0.0.1:0");
    let script = format!(
        "exec 3<>/dev/tcp/127.0.0.1/{} && echo REACHED",
        server.port()
    );
    let out = run(&l, "bash", &["-c", &script]).await;
    assert!(!out.stdout.contains("REACHED"), "{out:?}");
    assert!(seen.lock().unwrap().is_empty());
    assert!(
        out.warnings.iter().any(|w| w.starts_with(
            "loopback-only network reaches the sandbox's own loopback only, not the host's \
             loopback services: seccomp user notification"
        )),
        "{:?}",
        out.warnings
    );
}
