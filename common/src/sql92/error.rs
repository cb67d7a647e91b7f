//! Why an SQL92 filter expression was refused, and where.

use std::fmt;

/// A place in the expression text, as RocketMQ's JavaCC parser reports it.
///
/// Both numbers are 1-based. Lines break at `\n`, `\r` or `\r\n`; the column
/// counts characters (not bytes), and a tab counts as one column (JavaCC would
/// expand it to the next multiple of 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// Line number, starting at 1.
    pub line: usize,
    /// Character column within the line, starting at 1.
    pub column: usize,
}

impl Position {
    /// The position of byte `offset` of `source` (clamped to its end).
    pub(crate) fn at(source: &str, offset: usize) -> Position {
        let mut line = 1;
        let mut column = 1;
        let mut previous = '\0';
        for (index, c) in source.char_indices() {
            if index >= offset {
                break;
            }
            match c {
                '\n' if previous == '\r' => {}
                '\n' | '\r' => {
                    line += 1;
                    column = 1;
                }
                _ => column += 1,
            }
            previous = c;
        }
        Position { line, column }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// Why [`Sql92Filter::parse`](super::Sql92Filter::parse) refused an expression.
///
/// Every variant except [`Sql92Error::TooLong`] names the position of the
/// offending token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Sql92Error {
    /// The text is longer than [`MAX_EXPRESSION_BYTES`](super::MAX_EXPRESSION_BYTES).
    #[error("SQL92 expression is {len} bytes long, over the limit of {max} bytes")]
    TooLong {
        /// Length of the expression in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Parentheses, unary operators or chained comparisons nest deeper than
    /// [`MAX_NESTING_DEPTH`](super::MAX_NESTING_DEPTH).
    #[error("SQL92 expression nests deeper than {max} levels at {position}")]
    TooDeep {
        /// Where the limit was crossed.
        position: Position,
        /// The limit.
        max: usize,
    },
    /// A character sequence that is no token of the grammar (JavaCC's
    /// `TokenMgrError`).
    #[error("SQL92 lexical error at {position}: {problem}")]
    Lexical {
        /// Where the bad input starts.
        position: Position,
        /// What is wrong, e.g. "unterminated string literal".
        problem: String,
    },
    /// A token where the grammar does not allow it (JavaCC's `ParseException`).
    #[error("SQL92 syntax error at {position}: expected {expected}, found {found}")]
    Syntax {
        /// Where the unexpected token starts.
        position: Position,
        /// What the grammar allows here.
        expected: &'static str,
        /// The token found instead.
        found: String,
    },
    /// Well-formed text that RocketMQ still refuses while building the
    /// expression: a non-boolean where a condition is needed, `NULL` or a
    /// string under `>`, reversed `BETWEEN` bounds, an out-of-range literal.
    #[error("SQL92 expression invalid at {position}: {problem}")]
    Invalid {
        /// Where the offending operator or operand starts.
        position: Position,
        /// What RocketMQ refuses and why.
        problem: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_lines_and_characters() {
        let src = "a = 'é'\r\nAND b\rc";
        assert_eq!(Position::at(src, 0), Position { line: 1, column: 1 });
        // 'é' is two bytes but one column.
        let after = src.find("'\r").map(|i| i + 1).unwrap_or(0);
        assert_eq!(Position::at(src, after), Position { line: 1, column: 8 });
        let and = src.find("AND").unwrap_or(0);
        assert_eq!(Position::at(src, and), Position { line: 2, column: 1 });
        let c = src.len() - 1;
        assert_eq!(Position::at(src, c), Position { line: 3, column: 1 });
        assert_eq!(Position::at(src, 10_000), Position { line: 3, column: 2 });
    }

    #[test]
    fn messages_name_position_and_problem() {
        let e = Sql92Error::Syntax {
            position: Position { line: 1, column: 7 },
            expected: "')'",
            found: "end of input".into(),
        };
        assert_eq!(
            e.to_string(),
            "SQL92 syntax error at line 1, column 7: expected ')', found end of input"
        );
    }
}
