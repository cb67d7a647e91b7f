//! Java properties text (broker.conf, controller.conf, the bodies of the
//! UPDATE_*_CONFIG requests) as `java.util.Properties` reads it, so keys
//! keep their case (an error names a key as the operator wrote it) and
//! values keep what an INI reader would take for comments
//! (`namesrvAddr=a:9876;b:9876`).
//!
//! Covered: `#` and `!` comment lines, `=`, `:` or whitespace between key
//! and value (whitespace around it skipped), a trailing backslash joining
//! the next line, and the escapes `\t \n \r \f \uXXXX` (any other escaped
//! character stands for itself). Trailing whitespace of a value is kept,
//! as Java keeps it; our value parsing trims it.

/// The `(key, value)` pairs of `text`, in order (a later duplicate wins
/// where they are applied).
pub fn parse(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(first) = lines.next() {
        let mut logical = first.trim_start().to_owned();
        if logical.is_empty() || logical.starts_with('#') || logical.starts_with('!') {
            continue;
        }
        while ends_with_continuation(&logical) {
            logical.pop();
            match lines.next() {
                Some(next) => logical.push_str(next.trim_start()),
                None => break,
            }
        }
        out.push(split(&logical));
    }
    out
}

/// `ours` (`key=value` lines) written over `existing`: the lines of
/// `existing` that do not set a key `ours` sets, then `ours`. A properties
/// file two writers share keeps both's keys (Apache's namesrv.conf gives
/// the NameServer and its embedded controller one `configStorePath`).
pub fn merged(existing: &str, ours: &str) -> String {
    let mine: Vec<String> = parse(ours).into_iter().map(|(k, _)| k).collect();
    let mut out = String::new();
    for line in existing.lines() {
        let t = line.trim_start();
        let comment = t.starts_with('#') || t.starts_with('!');
        if !t.is_empty() && (comment || !mine.contains(&split(t).0)) {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push_str(ours);
    out
}

/// An odd number of trailing backslashes continues the line.
fn ends_with_continuation(line: &str) -> bool {
    line.chars().rev().take_while(|c| *c == '\\').count() % 2 == 1
}

fn split(line: &str) -> (String, String) {
    let mut key = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => key.push(unescape(&mut chars)),
            '=' | ':' => return (key, value(chars.collect::<String>().trim_start())),
            c if c.is_whitespace() => {
                let rest: String = chars.collect();
                let rest = rest.trim_start();
                let rest = rest.strip_prefix(['=', ':']).map_or(rest, str::trim_start);
                return (key, value(rest));
            }
            c => key.push(c),
        }
    }
    (key, String::new())
}

fn value(raw: &str) -> String {
    let mut out = String::new();
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            out.push(unescape(&mut chars));
        } else {
            out.push(c);
        }
    }
    out
}

fn unescape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> char {
    match chars.next() {
        Some('t') => '\t',
        Some('n') => '\n',
        Some('r') => '\r',
        Some('f') => '\u{c}',
        Some('u') => {
            let hex: String = (0..4).filter_map(|_| chars.next()).collect();
            u32::from_str_radix(&hex, 16)
                .ok()
                .and_then(char::from_u32)
                .unwrap_or(char::REPLACEMENT_CHARACTER)
        }
        Some(c) => c,
        None => '\\',
    }
}

#[cfg(test)]
mod tests {
    use super::{merged, parse};

    #[test]
    fn merged_keeps_the_other_writers_keys_and_replaces_ours() {
        let existing =
            "# by the controller\nscanInactiveMasterInterval=7000\nnamesrvBrokerExpiry=1000\n";
        let out = merged(existing, "namesrvBrokerExpiry=30000\n");
        assert_eq!(
            out,
            "# by the controller\nscanInactiveMasterInterval=7000\nnamesrvBrokerExpiry=30000\n"
        );
        assert_eq!(merged("", "a=1\n"), "a=1\n");
    }

    fn pairs(text: &str) -> Vec<(String, String)> {
        parse(text)
    }

    #[test]
    fn java_properties_forms() {
        let got = pairs(
            "# comment\n! also\n\nbrokerClusterName = DefaultCluster\n\
             brokerName:broker-a\nbrokerId 0\n  deleteWhen=04\n\
             namesrvAddr=127.0.0.1:9876;127.0.0.2:9876\n\
             dLegerPeers=n0-127.0.0.1:40911;\\\n    n1-127.0.0.1:40912\n\
             path=C\\:\\\\store\\u0041\nempty=\nkeyOnly\n",
        );
        let want: Vec<(String, String)> = [
            ("brokerClusterName", "DefaultCluster"),
            ("brokerName", "broker-a"),
            ("brokerId", "0"),
            ("deleteWhen", "04"),
            ("namesrvAddr", "127.0.0.1:9876;127.0.0.2:9876"),
            ("dLegerPeers", "n0-127.0.0.1:40911;n1-127.0.0.1:40912"),
            ("path", "C:\\storeA"),
            ("empty", ""),
            ("keyOnly", ""),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        assert_eq!(got, want);
    }
}
