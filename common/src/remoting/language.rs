//! `LanguageCode`: the client language carried in every command header.

/// The language of the peer that built a command (RocketMQ's `LanguageCode`).
///
/// The binary header carries the byte value, the JSON header the name.
/// Unknown values decode as [`LanguageCode::Other`] instead of failing, since
/// the language never changes how a command is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum LanguageCode {
    /// `JAVA` (0); also the default, as in Java's `RemotingCommand`.
    #[default]
    Java = 0,
    /// `CPP` (1).
    Cpp = 1,
    /// `DOTNET` (2).
    Dotnet = 2,
    /// `PYTHON` (3).
    Python = 3,
    /// `DELPHI` (4).
    Delphi = 4,
    /// `ERLANG` (5).
    Erlang = 5,
    /// `RUBY` (6).
    Ruby = 6,
    /// `OTHER` (7); what unknown codes and names decode to.
    Other = 7,
    /// `HTTP` (8).
    Http = 8,
    /// `GO` (9).
    Go = 9,
    /// `PHP` (10).
    Php = 10,
    /// `OMS` (11).
    Oms = 11,
    /// `RUST` (12); only RocketMQ 5.x peers know this value.
    Rust = 12,
    /// `NODE_JS` (13); only recent RocketMQ 5.x peers know this value.
    NodeJs = 13,
}

impl LanguageCode {
    /// Every code, in wire order.
    pub const ALL: [LanguageCode; 14] = [
        Self::Java,
        Self::Cpp,
        Self::Dotnet,
        Self::Python,
        Self::Delphi,
        Self::Erlang,
        Self::Ruby,
        Self::Other,
        Self::Http,
        Self::Go,
        Self::Php,
        Self::Oms,
        Self::Rust,
        Self::NodeJs,
    ];

    /// The byte value used by the binary header.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The code for a byte value; unknown values become [`LanguageCode::Other`].
    pub fn from_code(code: u8) -> Self {
        Self::ALL
            .get(usize::from(code))
            .copied()
            .unwrap_or(Self::Other)
    }

    /// The Java enum name used by the JSON header (`"JAVA"`, `"CPP"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::Java => "JAVA",
            Self::Cpp => "CPP",
            Self::Dotnet => "DOTNET",
            Self::Python => "PYTHON",
            Self::Delphi => "DELPHI",
            Self::Erlang => "ERLANG",
            Self::Ruby => "RUBY",
            Self::Other => "OTHER",
            Self::Http => "HTTP",
            Self::Go => "GO",
            Self::Php => "PHP",
            Self::Oms => "OMS",
            Self::Rust => "RUST",
            Self::NodeJs => "NODE_JS",
        }
    }

    /// The code for a Java enum name, ignoring ASCII case and surrounding
    /// blanks; unknown names become [`LanguageCode::Other`].
    pub fn from_name(name: &str) -> Self {
        let name = name.trim();
        Self::ALL
            .iter()
            .copied()
            .find(|code| code.name().eq_ignore_ascii_case(name))
            .unwrap_or(Self::Other)
    }
}

impl std::fmt::Display for LanguageCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pins the Java byte values; a value is never reused.
    #[test]
    fn java_values_are_pinned() {
        let expected: [(LanguageCode, u8, &str); 14] = [
            (LanguageCode::Java, 0, "JAVA"),
            (LanguageCode::Cpp, 1, "CPP"),
            (LanguageCode::Dotnet, 2, "DOTNET"),
            (LanguageCode::Python, 3, "PYTHON"),
            (LanguageCode::Delphi, 4, "DELPHI"),
            (LanguageCode::Erlang, 5, "ERLANG"),
            (LanguageCode::Ruby, 6, "RUBY"),
            (LanguageCode::Other, 7, "OTHER"),
            (LanguageCode::Http, 8, "HTTP"),
            (LanguageCode::Go, 9, "GO"),
            (LanguageCode::Php, 10, "PHP"),
            (LanguageCode::Oms, 11, "OMS"),
            (LanguageCode::Rust, 12, "RUST"),
            (LanguageCode::NodeJs, 13, "NODE_JS"),
        ];
        for (lang, code, name) in expected {
            assert_eq!(lang.code(), code, "{name}");
            assert_eq!(lang.name(), name);
            assert_eq!(LanguageCode::from_code(code), lang);
            assert_eq!(LanguageCode::from_name(name), lang);
        }
    }

    #[test]
    fn unknown_values_become_other() {
        assert_eq!(LanguageCode::from_code(14), LanguageCode::Other);
        assert_eq!(LanguageCode::from_code(255), LanguageCode::Other);
        assert_eq!(LanguageCode::from_name("COBOL"), LanguageCode::Other);
        assert_eq!(LanguageCode::from_name(" go "), LanguageCode::Go);
    }
}
