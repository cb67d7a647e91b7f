//! The checks RocketMQ makes while it builds an expression, after the grammar
//! has accepted the text: `SelectorParser.asBooleanExpression`, the
//! `ComparisonExpression.create*` factories and `ConstantExpression.create*`.
//! In Java they throw from inside the parser, so the subscription is refused;
//! here each returns a [`Refusal`] that the parser turns into
//! `Sql92Error::Invalid` at the given offset.

use super::ast::{Expr, Literal};
use super::eval::literal_value;
use super::value::java_compare;
use std::cmp::Ordering;

/// What RocketMQ refuses, and the byte offset to report it at.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) offset: usize,
    pub(crate) problem: String,
}

fn refuse<T>(offset: usize, problem: String) -> Result<T, Refusal> {
    Err(Refusal { offset, problem })
}

/// Longest rendering of an operand quoted in an error message.
const MAX_QUOTED_CHARS: usize = 40;

fn clip(expr: &Expr) -> String {
    let text = expr.to_string();
    match text.char_indices().nth(MAX_QUOTED_CHARS) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

/// `SelectorParser.asBooleanExpression`: a condition passes, a property is
/// cast (`UnaryExpression.createBooleanCast`), anything else (a string or
/// number literal, a negation) is refused.
pub(crate) fn as_condition(expr: Expr, start: usize) -> Result<Expr, Refusal> {
    match expr {
        Expr::Property(name) => Ok(Expr::BoolCast(name)),
        expr if expr.is_boolean() => Ok(expr),
        other => refuse(
            start,
            format!("{} will not result in a boolean value", clip(&other)),
        ),
    }
}

/// `ComparisonExpression.createEqual`: no `NULL` literal on either side
/// (`checkEqualOperand`), and no `TRUE`/`FALSE` literal on the left of a
/// string or number literal (`checkEqualOperandCompatability`, which only
/// looks that way round).
pub(crate) fn check_equal(
    (left, left_start): (&Expr, usize),
    (right, right_start): (&Expr, usize),
    at: usize,
) -> Result<(), Refusal> {
    for (side, start) in [(left, left_start), (right, right_start)] {
        if *side == Expr::Literal(Literal::Null) {
            return refuse(
                start,
                "NULL cannot be compared with = or <>; use IS NULL".into(),
            );
        }
    }
    if let (Expr::Literal(Literal::Bool(_)), Expr::Literal(r)) = (left, right) {
        if !matches!(r, Literal::Bool(_)) {
            return refuse(at, format!("{} cannot be compared with {r}", clip(left)));
        }
    }
    Ok(())
}

/// `ComparisonExpression.checkLessThanOperand`: only number literals,
/// properties and negations may be ordered (`op` is `>`, `BETWEEN`, ...).
pub(crate) fn check_orderable(expr: &Expr, start: usize, op: &str) -> Result<(), Refusal> {
    match expr {
        Expr::Literal(Literal::Int(_) | Literal::Long(_) | Literal::Double(_)) => Ok(()),
        Expr::Literal(lit) => refuse(start, format!("{lit} cannot be compared with {op}")),
        expr if expr.is_boolean() => {
            refuse(start, format!("a condition cannot be compared with {op}"))
        }
        _ => Ok(()),
    }
}

/// `ComparisonExpression.createBetween` (not `createNotBetween`) refuses
/// reversed bounds, but only when both are literals: `-1` is a negation, so
/// `a BETWEEN -1 AND -5` passes. Call after [`check_orderable`].
pub(crate) fn check_between_bounds(low: &Expr, high: &Expr, at: usize) -> Result<(), Refusal> {
    if let (Expr::Literal(lo), Expr::Literal(hi)) = (low, high) {
        // Both are number literals by now, so the comparison cannot fail.
        if matches!(
            java_compare(literal_value(hi), literal_value(lo)),
            Ok(Ordering::Less) | Err(_)
        ) {
            return refuse(
                at,
                format!("BETWEEN lower bound {lo} is greater than upper bound {hi}"),
            );
        }
    }
    Ok(())
}

/// `ComparisonExpression.createInFilter`: the left side must be a property.
pub(crate) fn in_property(expr: Expr, start: usize) -> Result<String, Refusal> {
    match expr {
        Expr::Property(name) => Ok(name),
        _ => refuse(start, "IN needs a property name on its left".into()),
    }
}

/// `ConstantExpression.createFromDecimal`: an optional `l`/`L` is dropped,
/// the digits must fit a Java `long`, and an `int` is kept when it fits.
pub(crate) fn decimal_literal(image: &str, start: usize) -> Result<Literal, Refusal> {
    let digits = image.trim_end_matches(['l', 'L']);
    match digits.parse::<i64>() {
        Ok(value) => Ok(i32::try_from(value).map_or(Literal::Long(value), Literal::Int)),
        Err(_) => refuse(
            start,
            format!("integer literal {image} is outside the Java long range"),
        ),
    }
}

/// `ConstantExpression.createFloat`: the value must be at most
/// `Double.MAX_VALUE` and at least `Double.MIN_VALUE` (4.9E-324), so a
/// literal that reads as zero (`0.0`, `.0`, `1e-400`) is refused.
pub(crate) fn float_literal(image: &str, start: usize) -> Result<Literal, Refusal> {
    let Ok(value) = image.parse::<f64>() else {
        return refuse(start, format!("{image} is not a floating-point literal"));
    };
    if value.is_infinite() {
        return refuse(
            start,
            format!("float literal {image} is greater than Double.MAX_VALUE"),
        );
    }
    if value < f64::from_bits(1) {
        return refuse(
            start,
            format!("float literal {image} is less than Double.MIN_VALUE (4.9E-324)"),
        );
    }
    Ok(Literal::Double(value))
}
