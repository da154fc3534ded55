//! The host names the canvas answers to: its guard against DNS rebinding.
//!
//! A page on an attacker's site can make its own name resolve to
//! 127.0.0.1 and then talk to the canvas as a "same-origin" page: the
//! browser sends the attacker's name in `Host` and `Origin`. So every
//! request must name, in `Host`, one of the hosts the canvas is meant to
//! serve: the loopback names with the bound port, the listen address
//! itself, and what `[plugins.canvas] allowed_hosts` adds. Anything else
//! is answered 421 before any route, so it never reaches the login, a
//! cookie or the WebSocket. The comparison is exact (ASCII case aside):
//! a name without a port matches only a `Host` without one, which a
//! browser sends only for the scheme's default port.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use axum::http::{HeaderMap, Uri, header};

/// The hosts one canvas serves, lowercase `host` or `host:port` strings,
/// as a browser writes them in `Host` and `Origin`.
#[derive(Clone, Debug)]
pub struct Hosts {
    names: Vec<String>,
}

impl Hosts {
    /// The hosts of a canvas bound to `bound`, plus `extra` (entries
    /// already checked by [`check_entry`]).
    pub fn new(bound: SocketAddr, extra: &[String]) -> Hosts {
        let port = bound.port();
        let mut names: Vec<String> = ["127.0.0.1", "localhost", "[::1]"]
            .iter()
            .map(|name| format!("{name}:{port}"))
            .collect();
        // Port 80 is http's default: a browser leaves it out of `Host`.
        if port == 80 {
            names.extend(["127.0.0.1", "localhost", "[::1]"].map(String::from));
        }
        // A specific listen address is a host the owner chose to serve
        // (an IP literal cannot be rebound); 0.0.0.0 names no host.
        if !bound.ip().is_unspecified() {
            names.push(bound.to_string());
            if port == 80 {
                names.push(match bound.ip() {
                    IpAddr::V4(ip) => ip.to_string(),
                    IpAddr::V6(ip) => format!("[{ip}]"),
                });
            }
        }
        names.extend(extra.iter().cloned());
        names.sort();
        names.dedup();
        Hosts { names }
    }

    /// Whether `authority` (`host` or `host:port`) is served.
    pub fn allows(&self, authority: &str) -> bool {
        self.names.iter().any(|n| n.eq_ignore_ascii_case(authority))
    }

    /// Whether a request is addressed to a served host: exactly one
    /// `Host` header naming one, and, when the request line has an
    /// absolute URL (which HTTP/1.1 says wins over `Host`), that URL's
    /// authority too.
    pub fn admits(&self, headers: &HeaderMap, uri: &Uri) -> bool {
        let mut values = headers.get_all(header::HOST).iter();
        let (Some(host), None) = (values.next(), values.next()) else {
            return false;
        };
        let host_ok = host.to_str().is_ok_and(|h| self.allows(h));
        host_ok && uri.authority().is_none_or(|a| self.allows(a.as_str()))
    }

    /// Whether the request comes from a page of this canvas: its `Origin`
    /// is `http://` or `https://` plus the `Host` it was sent to, and that
    /// host is served.
    pub fn same_origin(&self, headers: &HeaderMap) -> bool {
        let get = |name| headers.get(name).and_then(|v| v.to_str().ok());
        let (Some(origin), Some(host)) = (get(header::ORIGIN), get(header::HOST)) else {
            return false;
        };
        let authority = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"));
        authority.is_some_and(|a| a.eq_ignore_ascii_case(host) && self.allows(a))
    }
}

/// Checks one `allowed_hosts` entry, `host` or `host:port` (a DNS name,
/// an IPv4 address or a bracketed IPv6 address), and returns it as a
/// browser would send it: lowercase, the IPv6 address in its short form.
pub fn check_entry(entry: &str) -> Result<String, &'static str> {
    const SHAPE: &str =
        "is not a host name with an optional port, like \"myhost.lan:8080\" (no scheme, no path)";
    if entry.contains(['/', '@']) {
        return Err(SHAPE);
    }
    let (host, port) = if let Some(rest) = entry.strip_prefix('[') {
        let (inner, after) = rest.split_once(']').ok_or(SHAPE)?;
        let ip: Ipv6Addr = inner.parse().map_err(|_| SHAPE)?;
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':').ok_or(SHAPE)?),
        };
        (format!("[{ip}]"), port)
    } else {
        let (host, port) = match entry.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (entry, None),
        };
        let labels_ok = host.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
        if host.is_empty() || host.len() > 253 || !labels_ok {
            return Err(SHAPE);
        }
        (host.to_ascii_lowercase(), port)
    };
    match port {
        None => Ok(host),
        Some(port) => {
            let number: u16 = port
                .bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| port.parse().ok())
                .flatten()
                .filter(|p| *p != 0)
                .ok_or("has a port that is not a number from 1 to 65535")?;
            Ok(format!("{host}:{number}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn the_loopback_names_with_the_port_are_served_and_nothing_else() {
        let hosts = Hosts::new("127.0.0.1:8080".parse().unwrap(), &[]);
        for good in [
            "127.0.0.1:8080",
            "localhost:8080",
            "LOCALHOST:8080",
            "[::1]:8080",
        ] {
            assert!(hosts.allows(good), "{good}");
        }
        for bad in [
            "",
            "127.0.0.1",
            "localhost",
            "127.0.0.1:8081",
            "evil.example:8080",
            "localhost.evil.example:8080",
            "127.0.0.2:8080",
            "0.0.0.0:8080",
        ] {
            assert!(!hosts.allows(bad), "{bad}");
        }
        let on_80 = Hosts::new("127.0.0.1:80".parse().unwrap(), &[]);
        assert!(on_80.allows("localhost") && on_80.allows("localhost:80"));
    }

    #[test]
    fn the_listen_address_and_the_configured_hosts_are_served() {
        let hosts = Hosts::new(
            "192.168.1.5:8080".parse().unwrap(),
            &["myhost.lan:8080".into()],
        );
        assert!(hosts.allows("192.168.1.5:8080"));
        assert!(hosts.allows("myhost.lan:8080"));
        assert!(!hosts.allows("myhost.lan"));
        let any = Hosts::new("0.0.0.0:8080".parse().unwrap(), &[]);
        assert!(!any.allows("0.0.0.0:8080"));
        assert!(!any.allows("192.168.1.5:8080"));
    }

    #[test]
    fn a_request_needs_one_served_host() {
        let hosts = Hosts::new("127.0.0.1:8080".parse().unwrap(), &[]);
        let plain: Uri = "/login".parse().unwrap();
        let cases = [
            (vec![(header::HOST, "127.0.0.1:8080")], "/login", true),
            (vec![], "/login", false),
            (vec![(header::HOST, "evil.example:8080")], "/login", false),
            (
                vec![
                    (header::HOST, "127.0.0.1:8080"),
                    (header::HOST, "evil.example:8080"),
                ],
                "/login",
                false,
            ),
            (
                vec![(header::HOST, "127.0.0.1:8080")],
                "http://evil.example:8080/login",
                false,
            ),
            (
                vec![(header::HOST, "127.0.0.1:8080")],
                "http://localhost:8080/login",
                true,
            ),
        ];
        for (pairs, uri, expected) in cases {
            let uri: Uri = uri.parse().unwrap_or(plain.clone());
            assert_eq!(
                hosts.admits(&headers(&pairs), &uri),
                expected,
                "{pairs:?} {uri}"
            );
        }
    }

    #[test]
    fn the_origin_must_be_the_served_host_it_was_sent_to() {
        let hosts = Hosts::new(
            "127.0.0.1:8080".parse().unwrap(),
            &["myhost.lan:8080".into()],
        );
        let cases = [
            ("127.0.0.1:8080", "http://127.0.0.1:8080", true),
            ("127.0.0.1:8080", "https://127.0.0.1:8080", true),
            ("myhost.lan:8080", "http://myhost.lan:8080", true),
            ("127.0.0.1:8080", "http://localhost:8080", false),
            ("127.0.0.1:8080", "http://evil.example", false),
            ("127.0.0.1:8080", "null", false),
            ("127.0.0.1:8080", "http://127.0.0.1:8080/", false),
            ("evil.example:8080", "http://evil.example:8080", false),
        ];
        for (host, origin, expected) in cases {
            let map = headers(&[(header::HOST, host), (header::ORIGIN, origin)]);
            assert_eq!(hosts.same_origin(&map), expected, "{host} {origin}");
        }
        assert!(!hosts.same_origin(&headers(&[(header::HOST, "127.0.0.1:8080")])));
    }

    #[test]
    fn entries_are_checked_and_normalized() {
        let cases = [
            ("MyHost.lan:8080", Ok("myhost.lan:8080")),
            ("pages.example.org", Ok("pages.example.org")),
            ("192.168.1.5:8080", Ok("192.168.1.5:8080")),
            ("[::0002]:80", Ok("[::2]:80")),
            ("[fe80::1]", Ok("[fe80::1]")),
            ("myhost:08080", Ok("myhost:8080")),
            ("http://myhost:8080", Err("is not a host name")),
            ("myhost:8080/", Err("no scheme, no path")),
            ("myhost:0", Err("not a number")),
            ("myhost:+80", Err("not a number")),
            ("myhost:70000", Err("not a number")),
            ("", Err("is not a host name")),
            ("*", Err("is not a host name")),
            ("my host", Err("is not a host name")),
            ("host..lan", Err("is not a host name")),
            ("[::1", Err("is not a host name")),
            ("[::1]x", Err("is not a host name")),
            ("::1", Err("is not a host name")),
        ];
        // A DNS name is at most 253 characters.
        let longest = format!("{}a", "a.".repeat(126));
        let too_long = format!("b{longest}");
        let lengths = [
            (longest.as_str(), Ok(longest.as_str())),
            (too_long.as_str(), Err("is not a host name")),
        ];
        for (entry, expected) in cases.into_iter().chain(lengths) {
            match (check_entry(entry), expected) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{entry}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "{entry}: {got}"),
                (got, want) => panic!("{entry}: got {got:?}, wanted {want:?}"),
            }
        }
    }
}
