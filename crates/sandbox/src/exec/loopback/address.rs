//! The pure decision of loopback mediation: which socket addresses are the host's loopback.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

/// The address a `connect` names, parsed from the bytes read out of the caller (its own copy:
/// whatever the caller writes there afterwards changes nothing), when it is a loopback one:
///
/// - IPv4: `127.0.0.0/8`, and `0.0.0.0`, which Linux connects to as the local host;
/// - IPv6: `::1`, `::` (the local host, as `0.0.0.0`), and the IPv4-mapped forms of the IPv4
///   ones (`::ffff:127.0.0.0/104`, `::ffff:0.0.0.0`).
///
/// `None` for every other address, family, or a short or malformed `sockaddr`.
pub(crate) fn loopback_target(sockaddr: &[u8]) -> Option<SocketAddr> {
    let family = u16::from_ne_bytes(sockaddr.get(0..2)?.try_into().ok()?);
    match i32::from(family) {
        libc::AF_INET => {
            let port = u16::from_be_bytes(sockaddr.get(2..4)?.try_into().ok()?);
            let octets: [u8; 4] = sockaddr.get(4..8)?.try_into().ok()?;
            let ip = Ipv4Addr::from(octets);
            is_local_v4(ip).then(|| SocketAddr::V4(SocketAddrV4::new(ip, port)))
        }
        libc::AF_INET6 => {
            // sockaddr_in6: family, port, flowinfo (4), address (16), scope id (4).
            let port = u16::from_be_bytes(sockaddr.get(2..4)?.try_into().ok()?);
            let octets: [u8; 16] = sockaddr.get(8..24)?.try_into().ok()?;
            let ip = Ipv6Addr::from(octets);
            let local = ip == Ipv6Addr::LOCALHOST
                || ip == Ipv6Addr::UNSPECIFIED
                || ip.to_ipv4_mapped().is_some_and(is_local_v4);
            // Flow label and scope id are dropped: neither means anything on loopback.
            local.then(|| SocketAddr::V6(SocketAddrV6::new(ip, port, 0, 0)))
        }
        _ => None,
    }
}

fn is_local_v4(ip: Ipv4Addr) -> bool {
    ip.is_loopback() || ip.is_unspecified()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(ip: [u8; 4], port: u16) -> Vec<u8> {
        let mut bytes = (libc::AF_INET as u16).to_ne_bytes().to_vec();
        bytes.extend(port.to_be_bytes());
        bytes.extend(ip);
        bytes.extend([0u8; 8]);
        bytes
    }

    fn v6(ip: Ipv6Addr, port: u16) -> Vec<u8> {
        let mut bytes = (libc::AF_INET6 as u16).to_ne_bytes().to_vec();
        bytes.extend(port.to_be_bytes());
        bytes.extend([0u8; 4]);
        bytes.extend(ip.octets());
        bytes.extend(7u32.to_ne_bytes());
        bytes
    }

    #[test]
    fn loopback_addresses_are_recognised_and_nothing_else() {
        assert_eq!(
            loopback_target(&v4([127, 0, 0, 1], 3000)),
            Some("127.0.0.1:3000".parse().unwrap())
        );
        assert!(loopback_target(&v4([127, 9, 8, 7], 1)).is_some());
        assert!(loopback_target(&v4([0, 0, 0, 0], 1)).is_some());
        for outside in [
            [192, 0, 2, 2],
            [10, 0, 0, 1],
            [128, 0, 0, 1],
            [169, 254, 1, 1],
        ] {
            assert_eq!(loopback_target(&v4(outside, 80)), None, "{outside:?}");
        }
        assert_eq!(
            loopback_target(&v6(Ipv6Addr::LOCALHOST, 8080)),
            Some("[::1]:8080".parse().unwrap())
        );
        assert!(loopback_target(&v6(Ipv6Addr::UNSPECIFIED, 1)).is_some());
        let mapped = Ipv4Addr::new(127, 0, 0, 1).to_ipv6_mapped();
        assert!(loopback_target(&v6(mapped, 1)).is_some());
        let mapped_out = Ipv4Addr::new(192, 0, 2, 2).to_ipv6_mapped();
        assert_eq!(loopback_target(&v6(mapped_out, 1)), None);
        // IPv4-compatible (deprecated) and link-local addresses are not loopback.
        assert_eq!(loopback_target(&v6("::7f00:1".parse().unwrap(), 1)), None);
        assert_eq!(loopback_target(&v6("fe80::1".parse().unwrap(), 1)), None);
        // Short, empty and foreign sockaddrs.
        assert_eq!(loopback_target(&v4([127, 0, 0, 1], 1)[..6]), None);
        assert_eq!(loopback_target(&v6(Ipv6Addr::LOCALHOST, 1)[..20]), None);
        assert_eq!(loopback_target(&[]), None);
        let mut unix = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
        unix.extend(b"/tmp/x\0");
        assert_eq!(loopback_target(&unix), None);
    }
}
