//! The language and version a gRPC client is registered with in the client
//! tables (what admin tools list and the connection gauges count), as
//! RocketMQ 5.3.3's proxy registers them: the language from the client's
//! user agent in its settings (`UA.language`), else its `x-mq-language`
//! header; the version from the `x-mq-client-version` header, else
//! `UA.version`.
//!
//! Two choices differ from the proxy, which takes the language header as a
//! `LanguageCode` name and the version header as an `MQVersion` enum name:
//! - the Node.js SDK sends `x-mq-language: HTTP` but says NODE_JS in its
//!   user agent, so the user agent wins (the proxy registers it as HTTP);
//! - SDKs send a dotted release (`5.0.7`), which the proxy cannot read and
//!   replaces with its own version (`V5_3_3`); here `5.0.7` is `V5_0_7`.
//!   A version Java's enum does not have (the Node SDK's own `1.0.8`) gets
//!   the proxy's fallback, `V5_3_3`.

use rmq_common::remoting::version::{version_ordinal, V5_3_3};
use rmq_common::remoting::LanguageCode;
use rmq_grpc::pb;

/// The `LanguageCode` of a user agent's language; `None` when it names
/// none.
fn ua_language(l: pb::Language) -> Option<LanguageCode> {
    Some(match l {
        pb::Language::Unspecified => return None,
        pb::Language::Java | pb::Language::Kotlin => LanguageCode::Java,
        pb::Language::Cpp => LanguageCode::Cpp,
        pb::Language::DotNet => LanguageCode::Dotnet,
        pb::Language::Golang => LanguageCode::Go,
        pb::Language::Rust => LanguageCode::Rust,
        pb::Language::Python => LanguageCode::Python,
        pb::Language::Php => LanguageCode::Php,
        pb::Language::NodeJs => LanguageCode::NodeJs,
        pb::Language::Ruby => LanguageCode::Ruby,
        pb::Language::ObjectiveC | pb::Language::Dart => LanguageCode::Other,
    })
}

/// The client's language: its user agent's, else the `x-mq-language`
/// header read as a `LanguageCode` name (`GOLANG` too, the proto's name
/// for Go), else OTHER.
pub(crate) fn language(ua: Option<&pb::Ua>, header: &str) -> LanguageCode {
    if let Some(code) = ua.and_then(|u| ua_language(u.language())) {
        return code;
    }
    if header.trim().eq_ignore_ascii_case("GOLANG") {
        return LanguageCode::Go;
    }
    LanguageCode::from_name(header)
}

/// The client's version ordinal: the header's, else the user agent's,
/// else (neither names a version Java's enum has) `V5_3_3`, the proxy's.
pub(crate) fn version(ua: Option<&pb::Ua>, header: &str) -> i32 {
    version_ordinal(header)
        .or_else(|| ua.and_then(|u| version_ordinal(&u.version)))
        .unwrap_or(V5_3_3)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ua(language: pb::Language, version: &str) -> pb::Ua {
        pb::Ua {
            language: language as i32,
            version: version.to_owned(),
            ..Default::default()
        }
    }

    /// What the stock SDKs send: (UA language, UA version, language
    /// header, version header) and what they are registered as.
    #[test]
    fn the_sdks_register_as_their_language_and_release() {
        let cases = [
            (
                pb::Language::Java,
                "5.0.7",
                "JAVA",
                "5.0.7",
                LanguageCode::Java,
                "V5_0_7",
            ),
            (
                pb::Language::Golang,
                "5.0.1-rc1",
                "GO",
                "5.0.1-rc1",
                LanguageCode::Go,
                "V5_0_1",
            ),
            (
                pb::Language::Python,
                "5.1.2",
                "PYTHON",
                "5.1.2",
                LanguageCode::Python,
                "V5_1_2",
            ),
            (
                pb::Language::NodeJs,
                "1.0.8",
                "HTTP",
                "1.0.8",
                LanguageCode::NodeJs,
                "V5_3_3",
            ),
        ];
        for (l, v, lh, vh, code, name) in cases {
            let u = ua(l, v);
            assert_eq!(language(Some(&u), lh), code, "{lh}");
            let ordinal = version(Some(&u), vh);
            assert_eq!(rmq_common::remoting::version::version_desc(ordinal), name);
        }
    }

    #[test]
    fn headers_alone_and_nothing_at_all() {
        assert_eq!(language(None, "GOLANG"), LanguageCode::Go);
        assert_eq!(language(None, "java"), LanguageCode::Java);
        assert_eq!(language(None, ""), LanguageCode::Other);
        let unspecified = ua(pb::Language::Unspecified, "");
        assert_eq!(language(Some(&unspecified), "PYTHON"), LanguageCode::Python);
        assert_eq!(version(None, ""), V5_3_3);
        assert_eq!(
            version(Some(&ua(pb::Language::Java, "5.0.6")), "garbage"),
            425
        );
    }
}
