//! What to do when an index cannot be read: a server on this machine (an `http://127.0.0.1`
//! index, the way a local directory is often served) that has stopped is told apart from a
//! remote index that does not answer, and the fix names what only the user knows.

use reqwest::Url;

/// The next step for an index at `url` that could not be read (a connection refused or
/// timed out).
pub fn unreachable_fix(url: &str) -> String {
    let parsed = Url::parse(url).ok();
    let local_port = parsed.as_ref().and_then(|u| {
        let host = u.host_str()?.trim_start_matches('[').trim_end_matches(']');
        let loopback = host.eq_ignore_ascii_case("localhost")
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        loopback.then(|| u.port_or_known_default()).flatten()
    });
    match local_port {
        Some(port) => format!(
            "it is served from this machine and nothing answers on port {port}: start the \
             server that served it again, or give the directory it served as the index \
             (`--index-url file:///<dir>/`: pip, uv and rockbuild read a local index without a \
             server; docs/local.md)"
        ),
        None => "check the network, proxy settings (HTTPS_PROXY) and the URL, or give another \
                 copy of that index with --index-url"
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::unreachable_fix;

    #[test]
    fn a_stopped_local_server_is_told_apart_from_a_remote_index() {
        for url in [
            "http://127.0.0.1:52967/sdk/simple/",
            "http://localhost:8000/simple/",
            "http://[::1]:8000/simple/",
        ] {
            let fix = unreachable_fix(url);
            assert!(fix.contains("served from this machine"), "{url}: {fix}");
            assert!(fix.contains("file:///"), "{url}: {fix}");
        }
        assert!(unreachable_fix("http://127.0.0.1:52967/").contains("port 52967"));
        let remote = unreachable_fix("https://rocm.nightlies.amd.com/v2/gfx110X-all/");
        assert!(remote.contains("HTTPS_PROXY"), "{remote}");
    }
}
