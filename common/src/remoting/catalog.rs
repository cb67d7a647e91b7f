//! Every request code Apache RocketMQ 4.9's broker and NameServer serve,
//! every one Apache RocketMQ 5.3.3's broker serves, every one this broker
//! serves besides, and the requests the broker sends to clients: where
//! each is answered here, where 5.3.3 answers it, and for each one not
//! answered here, why. `docs/request-codes.md` is this table
//! (the rows of [`super::requests`]) rendered by [`markdown`]; a test keeps
//! the two equal and another sends every code to a running broker and
//! NameServer.

use super::RequestCode;

/// Where a request code is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// On the broker port.
    Broker,
    /// On the NameServer port.
    NameServer,
    /// Nowhere here: the broker answers REQUEST_CODE_NOT_SUPPORTED with
    /// the reason as the remark.
    No(&'static str),
}

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The code.
    pub code: RequestCode,
    /// Where it is answered.
    pub served: Served,
    /// How the answer differs from Java 4.9.7's, if it does.
    pub note: &'static str,
}

/// Sent by the broker to a client, which answers it.
pub const TO_CLIENT: &str = "sent by the broker to clients, not served by it";

/// The table, by code: the rows of [`super::requests`].
pub use super::requests::CATALOG;

/// Codes Apache RocketMQ 5.3.3's broker serves that 4.9.7 does not
/// declare (`docs/timer-and-5x-facts.md` section 8), POP's excepted (their
/// rows come with POP).
pub const BROKER_CODES_NEW_IN_5_3_3: [i32; 44] = [
    18, 60, 61, 225, 343, 345, 351, 352, 353, 354, 355, 361, 370, 400, 401, 402, 513, 905, 906,
    907, 908, 1007, 1008, 2001, 2002, 2003, 2004, 3001, 3002, 3003, 3004, 3005, 3006, 3007, 3008,
    3009, 3010, 200050, 200051, 200052, 200053, 200054, 200055, 200151,
];

/// The ACL 1.0 codes, no longer declared by 5.3.3 (its broker answers them
/// as unknown codes).
const ACL_1_CODES: std::ops::RangeInclusive<i32> = 50..=54;

/// Where Apache RocketMQ 5.3.3 answers the row's code: `broker`,
/// `NameServer`, `client` (sent to clients) or `no` with why.
pub fn apache_5_3_3(e: &Entry) -> &'static str {
    let code = e.code.code();
    if BROKER_CODES_NEW_IN_5_3_3.contains(&code) {
        return "broker";
    }
    if ACL_1_CODES.contains(&code) {
        return "no: ACL 1.0 codes are not declared in 5.x";
    }
    match e.served {
        Served::Broker if (30_000..200_000).contains(&code) => "no: this broker's own code",
        Served::Broker => "broker",
        Served::NameServer => "NameServer",
        Served::No(TO_CLIENT) => "client",
        Served::No(_) => "no",
    }
}

/// The row of `code`, if the table has one.
pub fn entry(code: i32) -> Option<&'static Entry> {
    CATALOG.iter().find(|e| e.code.code() == code)
}

/// Why this broker does not serve `code` (`None`: it does, or the code is
/// unknown).
pub fn not_served_reason(code: i32) -> Option<&'static str> {
    match entry(code)?.served {
        Served::No(why) => Some(why),
        _ => None,
    }
}

/// The table as the markdown of `docs/request-codes.md`.
pub fn markdown() -> String {
    let mut out = String::from(
        "| Code | Name | Served | Apache 5.3.3 | Differs from Apache RocketMQ 4.9.7 |\n|---:|---|---|---|---|\n",
    );
    let mut rows: Vec<&Entry> = CATALOG.iter().collect();
    rows.sort_by_key(|e| e.code.code());
    for e in rows {
        let served = match e.served {
            Served::Broker => "broker".to_owned(),
            Served::NameServer => "NameServer".to_owned(),
            Served::No(why) => format!("no: {why}"),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            e.code.code(),
            e.code.name(),
            served,
            apache_5_3_3(e),
            e.note
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_code_has_exactly_one_row() {
        for code in RequestCode::ALL {
            let rows = CATALOG.iter().filter(|e| e.code == *code).count();
            assert_eq!(rows, 1, "{code}");
        }
        assert_eq!(CATALOG.len(), RequestCode::ALL.len());
        assert_eq!(not_served_reason(39), Some(TO_CLIENT));
        assert_eq!(not_served_reason(10), None);
    }

    /// Every code 5.3.3's broker serves has a row.
    #[test]
    fn every_5_3_3_broker_code_has_a_row() {
        for code in BROKER_CODES_NEW_IN_5_3_3 {
            let e = entry(code).unwrap_or_else(|| panic!("no row for 5.3.3's code {code}"));
            assert_eq!(apache_5_3_3(e), "broker");
        }
        assert_eq!(entry(370).map(|e| e.served), Some(Served::Broker));
        assert_eq!(
            entry(50).map(apache_5_3_3),
            Some("no: ACL 1.0 codes are not declared in 5.x")
        );
        assert_eq!(
            entry(30001).map(apache_5_3_3),
            Some("no: this broker's own code")
        );
    }

    /// `docs/request-codes.md` is the table rendered; `UPDATE_DOCS=1`
    /// rewrites it.
    #[test]
    fn the_docs_table_is_the_catalog() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/request-codes.md");
        let want = format!("{DOC_HEAD}{}", markdown());
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "{} is not the catalog: run `UPDATE_DOCS=1 cargo test -p rmq-common catalog`",
            path.display()
        );
    }

    const DOC_HEAD: &str = "# Request codes\n\n\
Every request code Apache RocketMQ 4.9.7's broker and NameServer serve, every one\n\
Apache RocketMQ 5.3.3's broker serves (column \"Apache 5.3.3\": where 5.3.3 answers it),\n\
the ones this broker serves besides, and the requests the broker sends to clients. Generated from\n\
`common/src/remoting/requests.rs` (a test keeps them equal; `tests/tests/it/request_codes.rs`\n\
sends every code to a running broker and NameServer). A code not served is answered\n\
REQUEST_CODE_NOT_SUPPORTED with the reason below as its remark. Headers a Java 4.9 server\n\
would silently default when missing are refused here with SYSTEM_ERROR naming the field.\n\n";
}
