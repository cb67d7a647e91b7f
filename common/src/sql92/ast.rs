//! The parsed expression tree, shaped like the tree RocketMQ's `SelectorParser`
//! builds (after its `asBooleanExpression` casts), and its canonical text.
//!
//! Three deliberate differences from the Java tree, none observable:
//! - `a OR b OR c` is one n-ary node instead of a left-leaning chain, so a long
//!   chain does not deepen the tree (three-valued AND/OR are associative and
//!   the evaluation order is kept, see `eval.rs`);
//! - `BETWEEN` keeps its own node instead of `AND(>=, <=)`, so the tested value
//!   is stored once (the Java tree shares one object between both sides);
//! - `+x` leaves no node, exactly as in Java.

use std::fmt::{self, Display, Formatter};

/// A literal (`ConstantExpression` / `BooleanConstantExpression`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Literal {
    Str(String),
    /// A `DECIMAL_LITERAL` that fits a Java `int`.
    Int(i32),
    /// A `DECIMAL_LITERAL` outside the `int` range (Java `Long`).
    Long(i64),
    /// A `FLOATING_POINT_LITERAL` (Java `Double`), finite and positive.
    Double(f64),
    Bool(bool),
    Null,
}

/// The four ordering operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OrderOp {
    Gt,
    Ge,
    Lt,
    Le,
}

impl OrderOp {
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            OrderOp::Gt => ">",
            OrderOp::Ge => ">=",
            OrderOp::Lt => "<",
            OrderOp::Le => "<=",
        }
    }
}

/// One node of the expression tree.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr {
    Literal(Literal),
    /// A message property, as an operand (`PropertyExpression`).
    Property(String),
    /// Unary minus (`UnaryExpression.createNegate`).
    Negate(Box<Expr>),
    /// A property used where a condition is needed
    /// (`UnaryExpression.createBooleanCast`).
    BoolCast(String),
    Not(Box<Expr>),
    /// Two or more conditions.
    And(Vec<Expr>),
    /// Two or more conditions.
    Or(Vec<Expr>),
    /// `=`, or `<>` when `negated` (`NOT(=)` in Java).
    Equal {
        left: Box<Expr>,
        right: Box<Expr>,
        negated: bool,
    },
    Order {
        op: OrderOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    Between {
        value: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
        negated: bool,
    },
    IsNull {
        operand: Box<Expr>,
        negated: bool,
    },
    /// `IN` / `NOT IN`; RocketMQ only allows a property on the left and
    /// string literals in the list.
    In {
        property: String,
        values: Vec<String>,
        negated: bool,
    },
}

impl Expr {
    /// Whether Java builds a `BooleanExpression` for this node, the test of
    /// `SelectorParser.asBooleanExpression` and of
    /// `ComparisonExpression.checkLessThanOperand`. `NULL` is one too: it is
    /// `BooleanConstantExpression.NULL`.
    pub(crate) fn is_boolean(&self) -> bool {
        match self {
            Expr::Literal(lit) => matches!(lit, Literal::Bool(_) | Literal::Null),
            Expr::Property(_) | Expr::Negate(_) => false,
            Expr::BoolCast(_)
            | Expr::Not(_)
            | Expr::And(_)
            | Expr::Or(_)
            | Expr::Equal { .. }
            | Expr::Order { .. }
            | Expr::Between { .. }
            | Expr::IsNull { .. }
            | Expr::In { .. } => true,
        }
    }
}

/// Writes `s` as a string literal, doubling single quotes
/// (`ConstantExpression.encodeString`).
pub(crate) fn write_quoted(f: &mut Formatter<'_>, s: &str) -> fmt::Result {
    f.write_str("'")?;
    for (i, part) in s.split('\'').enumerate() {
        if i > 0 {
            f.write_str("''")?;
        }
        f.write_str(part)?;
    }
    f.write_str("'")
}

impl Display for Literal {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Str(s) => write_quoted(f, s),
            Literal::Int(v) => write!(f, "{v}"),
            Literal::Long(v) => write!(f, "{v}"),
            // Debug is the shortest text that reads back to the same value, and
            // for a finite positive number it is always a FLOATING_POINT_LITERAL
            // ("5.0", "0.1", "1e300", "1.5e-7").
            Literal::Double(v) => write!(f, "{v:?}"),
            Literal::Bool(true) => f.write_str("TRUE"),
            Literal::Bool(false) => f.write_str("FALSE"),
            Literal::Null => f.write_str("NULL"),
        }
    }
}

impl Expr {
    /// Binding strength: which production of the grammar yields this node
    /// (1 = `or`, 2 = `and`, 3 = `equality`, 4 = `comparison`, 5 = `unary`,
    /// 6 = `primary`).
    fn precedence(&self) -> u8 {
        match self {
            Expr::Or(_) => 1,
            Expr::And(_) => 2,
            Expr::Equal { .. } | Expr::IsNull { .. } => 3,
            Expr::Order { .. } | Expr::Between { .. } | Expr::In { .. } => 4,
            Expr::Not(_) | Expr::Negate(_) => 5,
            Expr::Literal(_) | Expr::Property(_) | Expr::BoolCast(_) => 6,
        }
    }
}

/// An operand in a position that needs at least `min` precedence; it is
/// parenthesised only when it binds more loosely.
struct Operand<'e>(&'e Expr, u8);

impl Display for Operand<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.0.precedence() < self.1 {
            write!(f, "({})", self.0)
        } else {
            write!(f, "{}", self.0)
        }
    }
}

/// Canonical text with the fewest parentheses that keep the tree: parsing it
/// gives back an equal tree, and it never nests deeper than the text the tree
/// was parsed from (parentheses only where the grammar needs them).
impl Display for Expr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let join = |f: &mut Formatter<'_>, items: &[Expr], word: &str, min: u8| -> fmt::Result {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    write!(f, " {word} ")?;
                }
                write!(f, "{}", Operand(item, min))?;
            }
            Ok(())
        };
        let not = |negated: bool| if negated { "NOT " } else { "" };
        match self {
            Expr::Literal(lit) => write!(f, "{lit}"),
            Expr::Property(name) | Expr::BoolCast(name) => f.write_str(name),
            // "- -5", never "--5", which would start a comment.
            Expr::Negate(inner) if matches!(**inner, Expr::Negate(_)) => write!(f, "- {inner}"),
            Expr::Negate(inner) => write!(f, "-{}", Operand(inner, 5)),
            Expr::Not(inner) => write!(f, "NOT {}", Operand(inner, 5)),
            Expr::Or(items) => join(f, items, "OR", 2),
            Expr::And(items) => join(f, items, "AND", 3),
            Expr::Equal {
                left,
                right,
                negated,
            } => {
                let op = if *negated { "<>" } else { "=" };
                write!(f, "{} {op} {}", Operand(left, 3), Operand(right, 4))
            }
            Expr::IsNull { operand, negated } => {
                write!(f, "{} IS {}NULL", Operand(operand, 3), not(*negated))
            }
            Expr::Order { op, left, right } => {
                write!(
                    f,
                    "{} {} {}",
                    Operand(left, 4),
                    op.symbol(),
                    Operand(right, 5)
                )
            }
            Expr::Between {
                value,
                low,
                high,
                negated,
            } => write!(
                f,
                "{} {}BETWEEN {} AND {}",
                Operand(value, 4),
                not(*negated),
                Operand(low, 5),
                Operand(high, 5)
            ),
            Expr::In {
                property,
                values,
                negated,
            } => {
                write!(f, "{property} {}IN (", not(*negated))?;
                for (i, v) in values.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write_quoted(f, v)?;
                }
                f.write_str(")")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prop(name: &str) -> Box<Expr> {
        Box::new(Expr::Property(name.into()))
    }

    #[test]
    fn literals_render_as_the_grammar_reads_them() {
        let cases = [
            (Literal::Str("it's".into()), "'it''s'"),
            (Literal::Str(String::new()), "''"),
            (Literal::Int(42), "42"),
            (Literal::Long(3_000_000_000), "3000000000"),
            (Literal::Double(5.0), "5.0"),
            (Literal::Double(1e300), "1e300"),
            (Literal::Double(1.5e-7), "1.5e-7"),
            (Literal::Bool(true), "TRUE"),
            (Literal::Bool(false), "FALSE"),
            (Literal::Null, "NULL"),
        ];
        for (lit, text) in cases {
            assert_eq!(lit.to_string(), text);
        }
    }

    #[test]
    fn nodes_render_with_parentheses_only_where_needed() {
        let e = Expr::Or(vec![
            Expr::And(vec![
                Expr::BoolCast("a".into()),
                Expr::Order {
                    op: OrderOp::Ge,
                    left: Box::new(Expr::Negate(prop("b"))),
                    right: Box::new(Expr::Literal(Literal::Int(5))),
                },
            ]),
            Expr::Not(Box::new(Expr::In {
                property: "TAGS".into(),
                values: vec!["x".into(), "y'z".into()],
                negated: true,
            })),
            Expr::Between {
                value: prop("c"),
                low: Box::new(Expr::Literal(Literal::Int(1))),
                high: Box::new(Expr::Literal(Literal::Double(2.5))),
                negated: true,
            },
            Expr::IsNull {
                operand: prop("d"),
                negated: true,
            },
            Expr::Equal {
                left: prop("e"),
                right: Box::new(Expr::Literal(Literal::Str("v".into()))),
                negated: true,
            },
        ]);
        assert_eq!(
            e.to_string(),
            "a AND -b >= 5 OR NOT (TAGS NOT IN ('x', 'y''z')) OR c NOT BETWEEN 1 AND 2.5 \
             OR d IS NOT NULL OR e <> 'v'"
        );
        let grouped = Expr::And(vec![
            Expr::Or(vec![Expr::BoolCast("a".into()), Expr::BoolCast("b".into())]),
            Expr::Not(Box::new(Expr::Equal {
                left: prop("c"),
                right: Box::new(Expr::Equal {
                    left: Box::new(Expr::Negate(Box::new(Expr::Negate(prop("d"))))),
                    right: Box::new(Expr::Literal(Literal::Bool(true))),
                    negated: false,
                }),
                negated: false,
            })),
        ]);
        assert_eq!(grouped.to_string(), "(a OR b) AND NOT (c = (- -d = TRUE))");
    }

    #[test]
    fn boolean_nodes_are_the_java_boolean_expressions() {
        assert!(Expr::Literal(Literal::Null).is_boolean());
        assert!(Expr::Literal(Literal::Bool(false)).is_boolean());
        assert!(!Expr::Literal(Literal::Str("x".into())).is_boolean());
        assert!(!Expr::Literal(Literal::Int(1)).is_boolean());
        assert!(!Expr::Property("a".into()).is_boolean());
        assert!(!Expr::Negate(prop("a")).is_boolean());
        assert!(Expr::BoolCast("a".into()).is_boolean());
    }
}
