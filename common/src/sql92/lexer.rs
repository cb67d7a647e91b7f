//! Tokens of RocketMQ 4.9's selector grammar (`SelectorParser.jj`, the
//! `TOKEN`, `SKIP` and `SPECIAL_TOKEN` sections).
//!
//! Like JavaCC's generated token manager, each token is the longest match at
//! the current position, and a keyword wins over an identifier of the same
//! length. Everything the grammar recognises is ASCII; other characters may
//! only appear inside string literals and comments.

use super::error::{Position, Sql92Error};

/// One token kind, with its decoded payload.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    Not,
    And,
    Or,
    Between,
    In,
    True,
    False,
    Null,
    Is,
    /// `DECIMAL_LITERAL`: `0`, or `[1-9][0-9]*` with an optional `l`/`L`.
    Decimal(String),
    /// `FLOATING_POINT_LITERAL`, as written (`5.`, `.5`, `5E10`, `1.5e-3`).
    Float(String),
    /// `STRING_LITERAL`, with the quotes removed and `''` decoded to `'`.
    Str(String),
    /// `ID`: `[a-zA-Z_$][a-zA-Z0-9_$]*` that is not a keyword.
    Id(String),
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    LParen,
    Comma,
    RParen,
    Plus,
    Minus,
    Eof,
}

/// A token and the byte offset where it starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub(crate) tok: Tok,
    pub(crate) offset: usize,
}

/// The grammar's reserved words (`TOKEN [IGNORE_CASE]`).
const KEYWORDS: [(&str, Tok); 9] = [
    ("NOT", Tok::Not),
    ("AND", Tok::And),
    ("OR", Tok::Or),
    ("BETWEEN", Tok::Between),
    ("IN", Tok::In),
    ("TRUE", Tok::True),
    ("FALSE", Tok::False),
    ("NULL", Tok::Null),
    ("IS", Tok::Is),
];

/// Longest text of a payload quoted back in an error message.
const MAX_QUOTED_CHARS: usize = 32;

impl Tok {
    /// How an error message names this token.
    pub(crate) fn describe(&self) -> String {
        fn clip(s: &str) -> String {
            let mut out: String = s.chars().take(MAX_QUOTED_CHARS).collect();
            if s.chars().count() > MAX_QUOTED_CHARS {
                out.push_str("...");
            }
            out
        }
        match self {
            Tok::Decimal(s) | Tok::Float(s) => format!("number {}", clip(s)),
            Tok::Str(s) => format!("string '{}'", clip(s)),
            Tok::Id(s) => format!("identifier {}", clip(s)),
            Tok::Eof => "end of input".to_owned(),
            other => format!("'{}'", other.symbol()),
        }
    }

    fn symbol(&self) -> &'static str {
        match self {
            Tok::Not => "NOT",
            Tok::And => "AND",
            Tok::Or => "OR",
            Tok::Between => "BETWEEN",
            Tok::In => "IN",
            Tok::True => "TRUE",
            Tok::False => "FALSE",
            Tok::Null => "NULL",
            Tok::Is => "IS",
            Tok::Eq => "=",
            Tok::Ne => "<>",
            Tok::Gt => ">",
            Tok::Ge => ">=",
            Tok::Lt => "<",
            Tok::Le => "<=",
            Tok::LParen => "(",
            Tok::Comma => ",",
            Tok::RParen => ")",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Decimal(_) | Tok::Float(_) | Tok::Str(_) | Tok::Id(_) | Tok::Eof => "",
        }
    }
}

fn is_id_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'$'
}

fn is_id_part(b: u8) -> bool {
    is_id_start(b) || b.is_ascii_digit()
}

/// Length of `<EXPONENT>` (`E [+-]? [0-9]+`) at `at`, or 0 when there is none.
fn exponent_len(bytes: &[u8], at: usize) -> usize {
    if !matches!(bytes.get(at), Some(b'e' | b'E')) {
        return 0;
    }
    let mut end = at + 1;
    if matches!(bytes.get(end), Some(b'+' | b'-')) {
        end += 1;
    }
    let digits = digits_len(bytes, end);
    if digits == 0 {
        0
    } else {
        end + digits - at
    }
}

fn digits_len(bytes: &[u8], at: usize) -> usize {
    bytes.get(at..).map_or(0, |rest| {
        rest.iter().take_while(|b| b.is_ascii_digit()).count()
    })
}

/// Splits `src` into tokens, ending with [`Tok::Eof`].
pub(crate) fn tokenize(src: &str) -> Result<Vec<Token>, Sql92Error> {
    let bytes = src.as_bytes();
    let lexical = |offset: usize, problem: String| Sql92Error::Lexical {
        position: Position::at(src, offset),
        problem,
    };
    let last_line_break = bytes.iter().rposition(|&c| c == b'\n' || c == b'\r');
    let mut tokens = Vec::new();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let start = i;
        let tok = match b {
            b' ' | b'\t' | b'\n' | b'\r' | 0x0c => {
                i += 1;
                continue;
            }
            // LINE_COMMENT must end with a line break; without one, "--" is
            // two minus signs (the regex does not match, "-" does).
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                // Checking `last_line_break` first keeps a long run of "-"
                // with no line break after it linear.
                let eol = match last_line_break {
                    Some(last) if last >= i + 2 => bytes[i + 2..]
                        .iter()
                        .position(|&c| c == b'\n' || c == b'\r')
                        .map(|rel| i + 2 + rel),
                    _ => None,
                };
                match eol {
                    Some(eol) => {
                        let crlf = bytes[eol] == b'\r' && bytes.get(eol + 1) == Some(&b'\n');
                        i = eol + if crlf { 2 } else { 1 };
                        continue;
                    }
                    None => {
                        i += 1;
                        Tok::Minus
                    }
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => match src[i + 2..].find("*/") {
                Some(rel) => {
                    i += 2 + rel + 2;
                    continue;
                }
                None => return Err(lexical(start, "unterminated /* comment".into())),
            },
            b'\'' => {
                let mut value = String::new();
                let mut j = i + 1;
                loop {
                    let Some(rel) = src[j..].find('\'') else {
                        return Err(lexical(start, "unterminated string literal".into()));
                    };
                    value.push_str(&src[j..j + rel]);
                    j += rel + 1;
                    if bytes.get(j) == Some(&b'\'') {
                        value.push('\'');
                        j += 1;
                    } else {
                        break;
                    }
                }
                i = j;
                Tok::Str(value)
            }
            b'0'..=b'9' => {
                let int_end = i + digits_len(bytes, i);
                if bytes.get(int_end) == Some(&b'.') {
                    let frac_end = int_end + 1 + digits_len(bytes, int_end + 1);
                    i = frac_end + exponent_len(bytes, frac_end);
                    Tok::Float(src[start..i].to_owned())
                } else if exponent_len(bytes, int_end) > 0 {
                    i = int_end + exponent_len(bytes, int_end);
                    Tok::Float(src[start..i].to_owned())
                } else if b == b'0' {
                    // DECIMAL_LITERAL is "0" alone: "012" is "0" then "12",
                    // and the l/L suffix only follows a non-zero first digit.
                    i += 1;
                    Tok::Decimal("0".to_owned())
                } else {
                    i = int_end;
                    if matches!(bytes.get(i), Some(b'l' | b'L')) {
                        i += 1;
                    }
                    Tok::Decimal(src[start..i].to_owned())
                }
            }
            b'.' if digits_len(bytes, i + 1) > 0 => {
                let frac_end = i + 1 + digits_len(bytes, i + 1);
                i = frac_end + exponent_len(bytes, frac_end);
                Tok::Float(src[start..i].to_owned())
            }
            _ if is_id_start(b) => {
                i += bytes[i..].iter().take_while(|&&c| is_id_part(c)).count();
                let word = &src[start..i];
                KEYWORDS
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(word))
                    .map_or_else(|| Tok::Id(word.to_owned()), |(_, t)| t.clone())
            }
            _ => {
                let (tok, len) = match (b, bytes.get(i + 1)) {
                    (b'<', Some(b'>')) => (Tok::Ne, 2),
                    (b'<', Some(b'=')) => (Tok::Le, 2),
                    (b'>', Some(b'=')) => (Tok::Ge, 2),
                    (b'<', _) => (Tok::Lt, 1),
                    (b'>', _) => (Tok::Gt, 1),
                    (b'=', _) => (Tok::Eq, 1),
                    (b'(', _) => (Tok::LParen, 1),
                    (b')', _) => (Tok::RParen, 1),
                    (b',', _) => (Tok::Comma, 1),
                    (b'+', _) => (Tok::Plus, 1),
                    (b'-', _) => (Tok::Minus, 1),
                    _ => {
                        let c = src[i..].chars().next().unwrap_or('\u{fffd}');
                        return Err(lexical(start, format!("unexpected character {c:?}")));
                    }
                };
                i += len;
                tok
            }
        };
        tokens.push(Token { tok, offset: start });
    }
    tokens.push(Token {
        tok: Tok::Eof,
        offset: src.len(),
    });
    Ok(tokens)
}

#[cfg(test)]
#[path = "lexer_tests.rs"]
mod tests;
