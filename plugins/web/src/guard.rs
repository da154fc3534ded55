//! Where `web_fetch` may go: http and https to public addresses, plus what
//! the owner allow-listed.
//!
//! The agent chooses the URL, and a page it reads can steer that choice, so
//! the fetch must not become a way into the owner's network (routers, local
//! services, the cloud metadata endpoint). Every address is judged: a
//! literal one as written, a name by every address it resolves to, and
//! every redirect again. The fetcher then connects only to the addresses
//! judged here (see `fetch`), so a name cannot resolve differently between
//! the check and the connection.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::Url;
use url::Host;

/// The cloud metadata endpoint (AWS, GCP, Azure, and others).
pub const METADATA_V4: Ipv4Addr = Ipv4Addr::new(169, 254, 169, 254);
/// The IPv6 metadata endpoint (AWS).
pub const METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);

/// What the owner allowed beyond the public internet: `[plugins.web]`
/// (and the browser plugin's `[plugins.browser]`, which judges by the same
/// rules).
#[derive(Debug, Clone)]
pub struct Policy {
    /// The plugin whose config table the refusals point to (`web`).
    pub plugin: &'static str,
    /// `allow_hosts`: entries of `host` (any port) or `host:port`; a host is
    /// a name, an IPv4 address or a bracketed IPv6 address.
    pub allow_hosts: Vec<AllowEntry>,
    /// `allow_private`: every non-public range is allowed, except the
    /// metadata endpoint, which must be allow-listed by address.
    pub allow_private: bool,
}

/// One `allow_hosts` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowEntry {
    /// Lowercased; an IPv6 address without brackets.
    pub host: String,
    /// `None` allows every port.
    pub port: Option<u16>,
}

impl AllowEntry {
    /// Parses `host`, `host:port`, `[v6]` or `[v6]:port`.
    pub fn parse(entry: &str) -> Result<AllowEntry, String> {
        let entry = entry.trim();
        let bad = || {
            format!(
                "allow_hosts entry {entry:?} is not a host or host:port (IPv6 in brackets: \"[::1]:8080\")"
            )
        };
        let (host, port) = if let Some(rest) = entry.strip_prefix('[') {
            let (v6, after) = rest.split_once(']').ok_or_else(bad)?;
            v6.parse::<Ipv6Addr>().map_err(|_| bad())?;
            let port = match after {
                "" => None,
                p => Some(p.strip_prefix(':').ok_or_else(bad)?),
            };
            (v6.to_owned(), port)
        } else if entry.parse::<Ipv6Addr>().is_ok() {
            (entry.to_owned(), None)
        } else {
            match entry.rsplit_once(':') {
                Some((host, port)) => (host.to_owned(), Some(port)),
                None => (entry.to_owned(), None),
            }
        };
        if host.is_empty()
            || !host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'))
        {
            return Err(bad());
        }
        let port = match port {
            Some(p) => Some(p.parse::<u16>().map_err(|_| bad())?),
            None => None,
        };
        // Addresses are compared in their canonical spelling, so
        // "0:0:0:0:0:0:0:1" allows what "::1" would.
        let host = match host.parse::<IpAddr>() {
            Ok(ip) => ip.to_string(),
            Err(_) => host.to_ascii_lowercase(),
        };
        Ok(AllowEntry { host, port })
    }

    fn matches(&self, host: &str, port: u16) -> bool {
        self.host == host && self.port.is_none_or(|p| p == port)
    }
}

impl Default for Policy {
    /// The web plugin's: nothing allowed beyond the public internet.
    fn default() -> Policy {
        Policy {
            plugin: "web",
            allow_hosts: Vec::new(),
            allow_private: false,
        }
    }
}

impl Policy {
    /// Checks a URL before anything is sent: the scheme, the credentials,
    /// and a literal address. A name's addresses are checked by
    /// [`Policy::check_resolved`] once resolved.
    pub fn check_url(&self, url: &Url) -> Result<(), String> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "refused: {url} uses {}:, and the {} plugin only reaches http and https",
                url.scheme(),
                self.plugin
            ));
        }
        // Credentials in a URL are refused rather than sent: the agent has
        // no business holding passwords, and `http://trusted@evil/` is a
        // classic way to make a link look like it goes somewhere else.
        if !url.username().is_empty() || url.password().is_some() {
            return Err(format!(
                "refused: {} carries a user name or password; the {} plugin does not send credentials",
                redacted(url),
                self.plugin
            ));
        }
        let port = url
            .port_or_known_default()
            .ok_or_else(|| format!("refused: {url} has no port"))?;
        match url.host() {
            None => Err(format!("refused: {url} has no host")),
            Some(Host::Domain(_)) => Ok(()),
            Some(Host::Ipv4(v4)) => self.check_address(IpAddr::V4(v4), port, None),
            Some(Host::Ipv6(v6)) => self.check_address(IpAddr::V6(v6), port, None),
        }
    }

    /// Checks every address `name` resolved to; one refused address
    /// refuses the name (any of them could be the one connected to).
    pub fn check_resolved(
        &self,
        name: &str,
        port: u16,
        addrs: &[SocketAddr],
    ) -> Result<(), String> {
        if addrs.is_empty() {
            return Err(format!("{name} resolves to no address"));
        }
        let name = name.to_ascii_lowercase();
        let name = name.trim_end_matches('.');
        if self.allow_hosts.iter().any(|e| e.matches(name, port)) {
            return Ok(());
        }
        for addr in addrs {
            self.check_address(addr.ip(), port, Some(name))?;
        }
        Ok(())
    }

    /// Checks one address: allowed if public, or allow-listed, or private
    /// with `allow_private` (never the metadata endpoint that way).
    fn check_address(&self, ip: IpAddr, port: u16, via: Option<&str>) -> Result<(), String> {
        let Some(kind) = classify(ip) else {
            return Ok(());
        };
        let literal = match ip {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => v6.to_string(),
        };
        if self.allow_hosts.iter().any(|e| e.matches(&literal, port)) {
            return Ok(());
        }
        if self.allow_private && kind != Kind::Metadata {
            return Ok(());
        }
        let shown = match ip {
            IpAddr::V4(_) => literal,
            IpAddr::V6(_) => format!("[{literal}]"),
        };
        let what = match via {
            Some(name) => format!("{name} resolves to {shown}, {}", kind.describe()),
            None => format!("{shown} is {}", kind.describe()),
        };
        Err(format!(
            "refused: {what}; allow it with [plugins.{}] allow_hosts = [\"{shown}:{port}\"]",
            self.plugin
        ))
    }
}

/// Why an address is not public, or `None` if it is.
pub fn classify(ip: IpAddr) -> Option<Kind> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => {
            // IPv4 mapped (::ffff:a.b.c.d) or translated (64:ff9b::/96)
            // into IPv6 reaches the IPv4 address: judge that.
            if let Some(v4) = v6.to_ipv4_mapped() {
                return classify_v4(v4);
            }
            let seg = v6.segments();
            if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                let [a, b] = seg[6].to_be_bytes();
                let [c, d] = seg[7].to_be_bytes();
                return classify_v4(Ipv4Addr::new(a, b, c, d));
            }
            if v6 == METADATA_V6 {
                Some(Kind::Metadata)
            } else if v6.is_loopback() {
                Some(Kind::Loopback)
            } else if v6.is_unspecified() {
                Some(Kind::Unspecified)
            } else if v6.is_multicast() {
                Some(Kind::Multicast)
            } else if seg[0] & 0xfe00 == 0xfc00 {
                Some(Kind::UniqueLocal)
            } else if seg[0] & 0xffc0 == 0xfe80 {
                Some(Kind::LinkLocal)
            } else if seg[0] == 0x2001 && seg[1] == 0x0db8 {
                Some(Kind::Reserved)
            } else if seg[..6] == [0, 0, 0, 0, 0, 0] {
                // The deprecated IPv4-compatible form (::a.b.c.d).
                Some(Kind::Reserved)
            } else {
                None
            }
        }
    }
}

/// The kinds of non-public address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// 127/8, ::1.
    Loopback,
    /// 10/8, 172.16/12, 192.168/16.
    Private,
    /// 100.64/10 (carrier-grade NAT).
    Shared,
    /// 169.254/16, fe80::/10.
    LinkLocal,
    /// 169.254.169.254, fd00:ec2::254.
    Metadata,
    /// fc00::/7.
    UniqueLocal,
    /// 0.0.0.0, ::, and 0/8.
    Unspecified,
    /// 224/4, ff00::/8.
    Multicast,
    /// 255.255.255.255.
    Broadcast,
    /// Documentation, benchmarking and reserved ranges.
    Reserved,
}

impl Kind {
    /// For messages: "a loopback address".
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Loopback => "a loopback address",
            Kind::Private => "a private address",
            Kind::Shared => "a shared (carrier-grade NAT) address",
            Kind::LinkLocal => "a link-local address",
            Kind::Metadata => "the cloud metadata address",
            Kind::UniqueLocal => "a unique-local address",
            Kind::Unspecified => "an unspecified address",
            Kind::Multicast => "a multicast address",
            Kind::Broadcast => "the broadcast address",
            Kind::Reserved => "a reserved address",
        }
    }
}

fn classify_v4(v4: Ipv4Addr) -> Option<Kind> {
    let [a, b, ..] = v4.octets();
    if v4 == METADATA_V4 {
        Some(Kind::Metadata)
    } else if v4.is_loopback() {
        Some(Kind::Loopback)
    } else if v4.is_private() {
        Some(Kind::Private)
    } else if a == 100 && (64..128).contains(&b) {
        Some(Kind::Shared)
    } else if v4.is_link_local() {
        Some(Kind::LinkLocal)
    } else if a == 0 {
        Some(Kind::Unspecified)
    } else if v4.is_broadcast() {
        Some(Kind::Broadcast)
    } else if v4.is_multicast() {
        Some(Kind::Multicast)
    } else if v4.is_documentation() || (a == 198 && (b == 18 || b == 19)) || a >= 240 {
        Some(Kind::Reserved)
    } else {
        None
    }
}

/// The URL with any password replaced, for messages.
pub fn redacted(url: &Url) -> String {
    let mut shown = url.clone();
    if shown.password().is_some() {
        // Setting a password only fails for URLs that cannot have one,
        // and this one has one.
        let _ = shown.set_password(Some("***"));
    }
    shown.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_non_public_addresses() {
        let cases = [
            ("127.0.0.1", Kind::Loopback),
            ("127.9.9.9", Kind::Loopback),
            ("10.0.0.1", Kind::Private),
            ("172.16.0.1", Kind::Private),
            ("172.31.255.255", Kind::Private),
            ("192.168.1.1", Kind::Private),
            ("100.64.0.1", Kind::Shared),
            ("100.127.255.255", Kind::Shared),
            ("169.254.1.1", Kind::LinkLocal),
            ("169.254.169.254", Kind::Metadata),
            ("0.0.0.0", Kind::Unspecified),
            ("224.0.0.1", Kind::Multicast),
            ("255.255.255.255", Kind::Broadcast),
            ("::1", Kind::Loopback),
            ("::", Kind::Unspecified),
            ("fc00::1", Kind::UniqueLocal),
            ("fd12::1", Kind::UniqueLocal),
            ("fd00:ec2::254", Kind::Metadata),
            ("fe80::1", Kind::LinkLocal),
            ("ff02::1", Kind::Multicast),
            ("::ffff:127.0.0.1", Kind::Loopback),
            ("::ffff:10.0.0.1", Kind::Private),
            ("::ffff:169.254.169.254", Kind::Metadata),
            ("64:ff9b::a9fe:a9fe", Kind::Metadata),
        ];
        for (ip, kind) in cases {
            assert_eq!(classify(ip.parse().unwrap()), Some(kind), "{ip}");
        }
        for ip in [
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700:4700::1111",
            "::ffff:1.1.1.1",
        ] {
            assert_eq!(classify(ip.parse().unwrap()), None, "{ip}");
        }
    }

    #[test]
    fn parses_allow_entries() {
        let ok = [
            ("127.0.0.1:8123", "127.0.0.1", Some(8123)),
            ("Router.LAN", "router.lan", None),
            ("[::1]:80", "::1", Some(80)),
            ("[::1]", "::1", None),
            ("::1", "::1", None),
            ("[0:0:0:0:0:0:0:1]:8080", "::1", Some(8080)),
        ];
        for (entry, host, port) in ok {
            let parsed = AllowEntry::parse(entry).unwrap();
            assert_eq!((parsed.host.as_str(), parsed.port), (host, port), "{entry}");
        }
        for bad in ["", "host:port", "[::1", "a b", "host:99999", "http://x"] {
            assert!(AllowEntry::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn allow_private_never_opens_the_metadata_address() {
        let policy = Policy {
            allow_private: true,
            ..Policy::default()
        };
        let url = |u: &str| Url::parse(u).unwrap();
        assert!(policy.check_url(&url("http://10.0.0.1/")).is_ok());
        let refused = policy
            .check_url(&url("http://169.254.169.254/latest/"))
            .unwrap_err();
        assert!(refused.contains("metadata"), "{refused}");
        let listed = Policy {
            allow_hosts: vec![AllowEntry::parse("169.254.169.254").unwrap()],
            ..Policy::default()
        };
        assert!(listed.check_url(&url("http://169.254.169.254/")).is_ok());
    }
}
