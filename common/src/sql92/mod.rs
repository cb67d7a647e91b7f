//! RocketMQ's SQL92 message filter (`MessageSelector.bySql`), as the 4.9.x
//! broker parses and evaluates it (`org.apache.rocketmq.filter`, checked
//! against tag `rocketmq-all-4.9.8`).
//!
//! # Language
//! - Comparisons `=`, `<>`, `>`, `>=`, `<`, `<=`; `[NOT] BETWEEN x AND y`;
//!   `prop [NOT] IN ('a', 'b')` (a property on the left, string literals in the
//!   list); `IS [NOT] NULL`; `AND`, `OR`, `NOT`; parentheses; unary `+`, `-`.
//! - Literals: strings in single quotes (`''` is a quote), decimal integers
//!   (`0` or `[1-9][0-9]*`, optional `L`; `int` when they fit, else `long`),
//!   floats (`5.`, `.5`, `1.5E-3`, `5E10`), `TRUE`, `FALSE`, `NULL`. There are
//!   no hex or octal literals in 4.9 (RocketMQ removed them from ActiveMQ's
//!   grammar), and no `LIKE`.
//! - Property names are `[a-zA-Z_$][a-zA-Z0-9_$]*` and case-sensitive;
//!   keywords (`NOT AND OR BETWEEN IN TRUE FALSE NULL IS`) are
//!   case-insensitive and cannot be property names. `TAGS` is just the
//!   message's `TAGS` property.
//! - `-- comment` up to a line break and `/* comment */` are skipped.
//! - `CONTAINS`, `STARTSWITH` and `ENDSWITH` arrived in RocketMQ 5.1.3 and are
//!   not part of 4.9: here they are plain property names, so `a CONTAINS 'x'`
//!   is a syntax error, as on a 4.9 broker.
//!
//! # Semantics
//! Property values are strings, and a comparison with a number literal parses
//! the string as that literal's Java type: `a > 5` needs `a` to be a Java
//! `int` ("10" passes, "10.5" and " 10" do not), `a > 5.0` parses a Java
//! `double`. A string that does not parse makes Java throw, and the broker
//! then drops the message whatever the rest of the expression says. `a > b`
//! with two properties compares them as doubles. A missing property is
//! unknown, and AND, OR and NOT follow three-valued logic; only TRUE matches.
//! The details, each with the Java code it follows, are in `checks.rs`
//! (what is refused at parse time), `eval.rs` and `value.rs`.
//!
//! # Limits
//! An expression may be at most [`MAX_EXPRESSION_BYTES`] long and nest at most
//! [`MAX_NESTING_DEPTH`] levels, so that a hostile subscription can neither
//! exhaust memory nor the stack of the thread that parses or evaluates it.

mod ast;
mod checks;
mod error;
mod eval;
mod lexer;
mod parser;
mod value;

#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod tests;

use std::fmt;

pub use error::{Position, Sql92Error};

/// Longest expression [`Sql92Filter::parse`] accepts, in bytes (64 KiB, room
/// for an `IN` list of a few thousand tags). RocketMQ has no such limit.
pub const MAX_EXPRESSION_BYTES: usize = 64 * 1024;

/// Deepest nesting [`Sql92Filter::parse`] accepts: parentheses, unary `NOT`,
/// `-` and `+`, and chained comparisons such as `a = b = c` each add a level;
/// a long `AND` or `OR` chain does not. Parsing and evaluation use a few stack
/// frames per level, so this bounds their stack use. RocketMQ has no such
/// limit.
pub const MAX_NESTING_DEPTH: usize = 128;

/// A parsed SQL92 filter expression, ready to test messages.
///
/// ```
/// use rmq_common::sql92::Sql92Filter;
///
/// let filter = Sql92Filter::parse("a > 5 AND b = 'x'")?;
/// let props = |name: &str| match name {
///     "a" => Some("7"),
///     "b" => Some("x"),
///     _ => None,
/// };
/// assert!(filter.matches(&props));
/// assert!(!filter.matches(&|_| None));
/// # Ok::<(), rmq_common::sql92::Sql92Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Sql92Filter {
    root: ast::Expr,
}

impl Sql92Filter {
    /// Parses `expression` with RocketMQ 4.9's grammar and the checks its
    /// `SelectorParser` makes while building the expression (for example, a
    /// string literal cannot be ordered with `>`, and `BETWEEN` bounds given
    /// as literals must be in order).
    ///
    /// Unlike RocketMQ, text left over after a complete expression is an error
    /// rather than silently ignored.
    pub fn parse(expression: &str) -> Result<Sql92Filter, Sql92Error> {
        if expression.len() > MAX_EXPRESSION_BYTES {
            return Err(Sql92Error::TooLong {
                len: expression.len(),
                max: MAX_EXPRESSION_BYTES,
            });
        }
        parser::parse(expression).map(|root| Sql92Filter { root })
    }

    /// Whether a message with these properties matches: true only when the
    /// expression evaluates to TRUE. Unknown (a missing property, say) and a
    /// value Java would fail to convert both mean no match, as on a RocketMQ
    /// broker.
    ///
    /// `property` returns the message property with the given name; `TAGS`
    /// is looked up like any other property.
    pub fn matches<'p>(&self, property: &dyn Fn(&str) -> Option<&'p str>) -> bool {
        eval::condition(&self.root, property) == Ok(Some(true))
    }
}

/// The canonical text of the expression: keywords in upper case, parentheses
/// only where the grammar needs them. Parsing it gives back an equal filter.
impl fmt::Display for Sql92Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.root)
    }
}
