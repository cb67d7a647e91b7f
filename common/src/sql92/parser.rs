//! Recursive-descent parser for RocketMQ 4.9's `SelectorParser.jj`, with the
//! checks RocketMQ makes while building the tree (`SelectorParser`,
//! `ComparisonExpression.create*`, `ConstantExpression.create*`).
//!
//! Productions, loosest first (each loops left-associatively):
//! ```text
//! or         := and (OR and)*
//! and        := equality (AND equality)*
//! equality   := comparison ( ('=' | '<>') comparison | IS NULL | IS NOT NULL )*
//! comparison := unary ( ('>' | '>=' | '<' | '<=') unary
//!                     | [NOT] BETWEEN unary AND unary
//!                     | [NOT] IN '(' string (',' string)* ')' )*
//! unary      := '+' unary | '-' unary | NOT unary | primary
//! primary    := literal | identifier | '(' or ')'
//! ```
//! `NOT` therefore binds tighter than comparisons: `NOT a = 'x'` is
//! `(NOT a) = 'x'`, and `NOT a > 1` is refused, as in RocketMQ.

use super::ast::{Expr, Literal, OrderOp};
use super::checks::{self, Refusal};
use super::error::{Position, Sql92Error};
use super::lexer::{tokenize, Tok, Token};
use super::MAX_NESTING_DEPTH;

/// Parses a whole expression into a condition.
pub(crate) fn parse(src: &str) -> Result<Expr, Sql92Error> {
    let mut parser = Parser {
        src,
        tokens: tokenize(src)?,
        next: 0,
        depth: 0,
    };
    let root = parser.or_expr()?;
    let root = parser.condition(root)?;
    // JavaCC's JmsSelector() has no <EOF>, so RocketMQ silently ignores what
    // follows a complete expression ("a = 1 b = 2" filters on a = 1). We refuse
    // it: a typo must not widen a subscription.
    if *parser.peek() != Tok::Eof {
        return Err(parser.syntax("AND, OR, a comparison or the end of the expression"));
    }
    Ok(root.expr)
}

/// A subtree, its height (a leaf is 0) and the byte offset of its text.
struct Node {
    expr: Expr,
    height: usize,
    start: usize,
}

struct Parser<'s> {
    src: &'s str,
    /// Always ends with `Tok::Eof`, which is never consumed.
    tokens: Vec<Token>,
    next: usize,
    /// Current recursion depth, bounded by `MAX_NESTING_DEPTH`.
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        self.peek_at(0)
    }

    fn peek_at(&self, ahead: usize) -> &Tok {
        self.tokens
            .get(self.next + ahead)
            .map_or(&Tok::Eof, |t| &t.tok)
    }

    fn offset(&self) -> usize {
        self.tokens
            .get(self.next)
            .map_or(self.src.len(), |t| t.offset)
    }

    fn bump(&mut self) {
        if *self.peek() != Tok::Eof {
            self.next += 1;
        }
    }

    fn eat(&mut self, tok: &Tok) -> bool {
        let found = self.peek() == tok;
        if found {
            self.bump();
        }
        found
    }

    fn expect(&mut self, tok: &Tok, expected: &'static str) -> Result<(), Sql92Error> {
        if self.eat(tok) {
            Ok(())
        } else {
            Err(self.syntax(expected))
        }
    }

    fn syntax(&self, expected: &'static str) -> Sql92Error {
        Sql92Error::Syntax {
            position: Position::at(self.src, self.offset()),
            expected,
            found: self.peek().describe(),
        }
    }

    fn refused(&self, refusal: Refusal) -> Sql92Error {
        Sql92Error::Invalid {
            position: Position::at(self.src, refusal.offset),
            problem: refusal.problem,
        }
    }

    fn too_deep(&self, offset: usize) -> Sql92Error {
        Sql92Error::TooDeep {
            position: Position::at(self.src, offset),
            max: MAX_NESTING_DEPTH,
        }
    }

    fn enter(&mut self) -> Result<(), Sql92Error> {
        self.depth += 1;
        if self.depth > MAX_NESTING_DEPTH {
            return Err(self.too_deep(self.offset()));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// A new node over children of height at most `child_height`.
    fn node(&self, expr: Expr, child_height: usize, start: usize) -> Result<Node, Sql92Error> {
        let height = child_height + 1;
        if height > MAX_NESTING_DEPTH {
            return Err(self.too_deep(start));
        }
        Ok(Node {
            expr,
            height,
            start,
        })
    }

    /// `SelectorParser.asBooleanExpression`, see [`checks::as_condition`].
    fn condition(&self, node: Node) -> Result<Node, Sql92Error> {
        let expr = checks::as_condition(node.expr, node.start).map_err(|r| self.refused(r))?;
        Ok(Node { expr, ..node })
    }

    fn or_expr(&mut self) -> Result<Node, Sql92Error> {
        self.enter()?;
        let first = self.and_expr()?;
        let node = if *self.peek() == Tok::Or {
            self.logic(first, Tok::Or)?
        } else {
            first
        };
        self.leave();
        Ok(node)
    }

    fn and_expr(&mut self) -> Result<Node, Sql92Error> {
        let first = self.equality()?;
        if *self.peek() == Tok::And {
            self.logic(first, Tok::And)
        } else {
            Ok(first)
        }
    }

    /// An AND or OR chain (`word` is the keyword), flattened into one node:
    /// nested nodes of the same kind, from parentheses, are spliced in.
    fn logic(&mut self, first: Node, word: Tok) -> Result<Node, Sql92Error> {
        let (start, is_or) = (first.start, word == Tok::Or);
        let mut items = Vec::new();
        let mut child_height = 0;
        let mut operand = first;
        loop {
            let node = self.condition(operand)?;
            let same_kind = matches!(
                (&node.expr, is_or),
                (Expr::Or(_), true) | (Expr::And(_), false)
            );
            match node.expr {
                Expr::Or(children) | Expr::And(children) if same_kind => {
                    child_height = child_height.max(node.height - 1);
                    items.extend(children);
                }
                expr => {
                    child_height = child_height.max(node.height);
                    items.push(expr);
                }
            }
            if !self.eat(&word) {
                break;
            }
            operand = if is_or {
                self.and_expr()?
            } else {
                self.equality()?
            };
        }
        let expr = if is_or {
            Expr::Or(items)
        } else {
            Expr::And(items)
        };
        self.node(expr, child_height, start)
    }

    fn equality(&mut self) -> Result<Node, Sql92Error> {
        let mut left = self.comparison()?;
        loop {
            let at = self.offset();
            match self.peek() {
                Tok::Eq | Tok::Ne => {
                    let negated = *self.peek() == Tok::Ne;
                    self.bump();
                    let right = self.comparison()?;
                    left = self.equal(left, right, negated, at)?;
                }
                Tok::Is => {
                    self.bump();
                    let negated = self.eat(&Tok::Not);
                    self.expect(
                        &Tok::Null,
                        if negated { "NULL" } else { "NULL or NOT NULL" },
                    )?;
                    let (height, start) = (left.height, left.start);
                    let operand = Box::new(left.expr);
                    left = self.node(Expr::IsNull { operand, negated }, height, start)?;
                }
                _ => return Ok(left),
            }
        }
    }

    /// `ComparisonExpression.createEqual`, see [`checks::check_equal`].
    fn equal(&self, left: Node, right: Node, negated: bool, at: usize) -> Result<Node, Sql92Error> {
        checks::check_equal((&left.expr, left.start), (&right.expr, right.start), at)
            .map_err(|r| self.refused(r))?;
        let (height, start) = (left.height.max(right.height), left.start);
        let (left, right) = (Box::new(left.expr), Box::new(right.expr));
        self.node(
            Expr::Equal {
                left,
                right,
                negated,
            },
            height,
            start,
        )
    }

    fn comparison(&mut self) -> Result<Node, Sql92Error> {
        let mut left = self.unary()?;
        loop {
            let at = self.offset();
            let op = match self.peek() {
                Tok::Gt => OrderOp::Gt,
                Tok::Ge => OrderOp::Ge,
                Tok::Lt => OrderOp::Lt,
                Tok::Le => OrderOp::Le,
                Tok::Between | Tok::In => {
                    left = self.range_or_list(left, false, at)?;
                    continue;
                }
                Tok::Not if matches!(self.peek_at(1), Tok::Between | Tok::In) => {
                    self.bump();
                    left = self.range_or_list(left, true, at)?;
                    continue;
                }
                Tok::Not => {
                    self.bump();
                    return Err(self.syntax("BETWEEN or IN after NOT"));
                }
                _ => return Ok(left),
            };
            self.bump();
            let right = self.unary()?;
            self.comparable(&left, op.symbol())?;
            self.comparable(&right, op.symbol())?;
            let (height, start) = (left.height.max(right.height), left.start);
            let (left_box, right) = (Box::new(left.expr), Box::new(right.expr));
            left = self.node(
                Expr::Order {
                    op,
                    left: left_box,
                    right,
                },
                height,
                start,
            )?;
        }
    }

    /// `ComparisonExpression.checkLessThanOperand`, see
    /// [`checks::check_orderable`].
    fn comparable(&self, node: &Node, op: &str) -> Result<(), Sql92Error> {
        checks::check_orderable(&node.expr, node.start, op).map_err(|r| self.refused(r))
    }

    /// `[NOT] BETWEEN low AND high` or `[NOT] IN (...)`, the keyword next.
    fn range_or_list(&mut self, value: Node, negated: bool, at: usize) -> Result<Node, Sql92Error> {
        let start = value.start;
        if self.eat(&Tok::In) {
            self.expect(&Tok::LParen, "'(' after IN")?;
            let mut values = Vec::new();
            loop {
                match self.peek().clone() {
                    Tok::Str(s) => values.push(s),
                    _ => return Err(self.syntax("a string literal in the IN list")),
                }
                self.bump();
                if !self.eat(&Tok::Comma) {
                    break;
                }
            }
            self.expect(&Tok::RParen, "',' or ')' in the IN list")?;
            let property = checks::in_property(value.expr, start).map_err(|r| self.refused(r))?;
            return self.node(
                Expr::In {
                    property,
                    values,
                    negated,
                },
                0,
                start,
            );
        }
        self.expect(&Tok::Between, "BETWEEN or IN")?;
        let low = self.unary()?;
        self.expect(&Tok::And, "AND between the BETWEEN bounds")?;
        let high = self.unary()?;
        let word = if negated { "NOT BETWEEN" } else { "BETWEEN" };
        for node in [&value, &low, &high] {
            self.comparable(node, word)?;
        }
        if !negated {
            checks::check_between_bounds(&low.expr, &high.expr, at).map_err(|r| self.refused(r))?;
        }
        let height = value.height.max(low.height).max(high.height);
        let (value, low, high) = (
            Box::new(value.expr),
            Box::new(low.expr),
            Box::new(high.expr),
        );
        self.node(
            Expr::Between {
                value,
                low,
                high,
                negated,
            },
            height,
            start,
        )
    }

    fn unary(&mut self) -> Result<Node, Sql92Error> {
        let start = self.offset();
        let prefix = self.peek().clone();
        if !matches!(prefix, Tok::Plus | Tok::Minus | Tok::Not) {
            return self.primary();
        }
        self.bump();
        self.enter()?;
        let operand = self.unary()?;
        self.leave();
        match prefix {
            // Unary plus builds nothing, in Java too.
            Tok::Plus => Ok(Node { start, ..operand }),
            Tok::Minus => self.node(Expr::Negate(Box::new(operand.expr)), operand.height, start),
            _ => {
                let operand = self.condition(operand)?;
                self.node(Expr::Not(Box::new(operand.expr)), operand.height, start)
            }
        }
    }

    fn primary(&mut self) -> Result<Node, Sql92Error> {
        let start = self.offset();
        let expr = match self.peek().clone() {
            Tok::LParen => {
                self.bump();
                let inner = self.or_expr()?;
                self.expect(&Tok::RParen, "')'")?;
                return Ok(Node { start, ..inner });
            }
            Tok::Id(name) => Expr::Property(name),
            Tok::Str(s) => Expr::Literal(Literal::Str(s)),
            Tok::Decimal(image) => {
                Expr::Literal(checks::decimal_literal(&image, start).map_err(|r| self.refused(r))?)
            }
            Tok::Float(image) => {
                Expr::Literal(checks::float_literal(&image, start).map_err(|r| self.refused(r))?)
            }
            Tok::True => Expr::Literal(Literal::Bool(true)),
            Tok::False => Expr::Literal(Literal::Bool(false)),
            Tok::Null => Expr::Literal(Literal::Null),
            _ => return Err(self.syntax("a literal, a property name, '(', '+', '-' or NOT")),
        };
        self.bump();
        Ok(Node {
            expr,
            height: 0,
            start,
        })
    }
}

#[cfg(test)]
#[path = "parser_tests.rs"]
mod tests;
