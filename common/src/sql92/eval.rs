//! Evaluation of a parsed expression against one message's properties, with
//! RocketMQ's three-valued logic: `Ok(Some(b))` is TRUE/FALSE, `Ok(None)` is
//! unknown (Java `null`), and `Err(Abort)` is a Java exception, which makes
//! the broker drop the message whatever the rest of the expression says
//! (`ExpressionMessageFilter.isMatchedByCommitLog` catches `Throwable`).
//!
//! Operands are evaluated left to right, and AND/OR stop where Java's
//! `LogicExpression` stops, so an operand that would throw is only reached
//! when Java reaches it too.

use super::ast::{Expr, Literal, OrderOp};
use super::value::{java_compare, java_double, java_double_cmp, java_equals, Abort, Value};
use std::cmp::Ordering;

/// Looks a message property up by name.
pub(crate) type Props<'f, 'p> = &'f dyn Fn(&str) -> Option<&'p str>;

/// The runtime value of a literal.
pub(crate) fn literal_value(lit: &Literal) -> Value<'_> {
    match lit {
        Literal::Str(s) => Value::Str(s),
        Literal::Int(v) => Value::Int(*v),
        Literal::Long(v) => Value::Long(*v),
        Literal::Double(v) => Value::Double(*v),
        Literal::Bool(b) => Value::Bool(*b),
        Literal::Null => Value::Null,
    }
}

fn from_tri<'a>(tri: Option<bool>) -> Value<'a> {
    tri.map_or(Value::Null, Value::Bool)
}

/// A condition's truth value. The parser only puts conditions where one is
/// read; anything else would be Java's `ClassCastException`.
pub(crate) fn condition<'a, 'p: 'a>(
    expr: &'a Expr,
    props: Props<'_, 'p>,
) -> Result<Option<bool>, Abort> {
    match evaluate(expr, props)? {
        Value::Bool(b) => Ok(Some(b)),
        Value::Null => Ok(None),
        _ => Err(Abort("a non-boolean where a condition was expected")),
    }
}

/// The value of any node.
pub(crate) fn evaluate<'a, 'p: 'a>(
    expr: &'a Expr,
    props: Props<'_, 'p>,
) -> Result<Value<'a>, Abort> {
    Ok(match expr {
        Expr::Literal(lit) => literal_value(lit),
        // MessageEvaluationContext.get: the property's String, or null.
        Expr::Property(name) => props(name).map_or(Value::Null, Value::Str),
        // UnaryExpression.createNegate: numbers keep their type; anything else
        // (a property's String, a Boolean) becomes null.
        Expr::Negate(inner) => match evaluate(inner, props)? {
            Value::Int(v) => Value::Int(v.wrapping_neg()),
            Value::Long(v) => Value::Long(v.wrapping_neg()),
            Value::Double(v) => Value::Double(-v),
            _ => Value::Null,
        },
        // UnaryExpression.createBooleanCast: null stays null, and a String is
        // never a Boolean, so a present property casts to FALSE, even "true".
        Expr::BoolCast(name) => props(name).map_or(Value::Null, |_| Value::Bool(false)),
        // UnaryExpression.createNOT: NOT unknown is unknown.
        Expr::Not(inner) => from_tri(condition(inner, props)?.map(|b| !b)),
        // LogicExpression.createAND: FALSE wins, then unknown, then TRUE.
        Expr::And(items) => {
            let mut unknown = false;
            for item in items {
                match condition(item, props)? {
                    Some(false) => return Ok(Value::Bool(false)),
                    Some(true) => {}
                    None => unknown = true,
                }
            }
            if unknown {
                Value::Null
            } else {
                Value::Bool(true)
            }
        }
        // LogicExpression.createOR: TRUE wins, then unknown, then FALSE.
        Expr::Or(items) => {
            let mut unknown = false;
            for item in items {
                match condition(item, props)? {
                    Some(true) => return Ok(Value::Bool(true)),
                    Some(false) => {}
                    None => unknown = true,
                }
            }
            if unknown {
                Value::Null
            } else {
                Value::Bool(false)
            }
        }
        Expr::Equal {
            left,
            right,
            negated,
        } => {
            let (lv, rv) = (evaluate(left, props)?, evaluate(right, props)?);
            let eq = equal(lv, rv)?;
            from_tri(if *negated { eq.map(|b| !b) } else { eq })
        }
        Expr::Order { op, left, right } => {
            let lv = evaluate(left, props)?;
            from_tri(order(*op, lv, right, props)?)
        }
        // createBetween is AND(value >= low, value <= high); createNotBetween
        // is OR(value < low, value > high).
        Expr::Between {
            value,
            low,
            high,
            negated: false,
        } => {
            let v = evaluate(value, props)?;
            match order(OrderOp::Ge, v, low, props)? {
                Some(false) => Value::Bool(false),
                ge => match (ge, order(OrderOp::Le, v, high, props)?) {
                    (_, Some(false)) => Value::Bool(false),
                    (Some(true), Some(true)) => Value::Bool(true),
                    _ => Value::Null,
                },
            }
        }
        Expr::Between {
            value,
            low,
            high,
            negated: true,
        } => {
            let v = evaluate(value, props)?;
            match order(OrderOp::Lt, v, low, props)? {
                Some(true) => Value::Bool(true),
                lt => match (lt, order(OrderOp::Gt, v, high, props)?) {
                    (_, Some(true)) => Value::Bool(true),
                    (Some(false), Some(false)) => Value::Bool(false),
                    _ => Value::Null,
                },
            }
        }
        // createIsNull is the unchecked `operand == NULL`, which is TRUE when
        // the operand is null and FALSE otherwise, never unknown.
        Expr::IsNull { operand, negated } => {
            let is_null = matches!(evaluate(operand, props)?, Value::Null);
            Value::Bool(is_null != *negated)
        }
        // UnaryExpression.createInExpression: a missing property is unknown
        // for IN and NOT IN alike; otherwise exact String equality.
        Expr::In {
            property,
            values,
            negated,
        } => match props(property) {
            None => Value::Null,
            Some(s) => Value::Bool(values.iter().any(|v| v == s) != *negated),
        },
    })
}

/// `ComparisonExpression.doCreateEqual`: null = null is TRUE, null = x is
/// unknown, but x = null is FALSE (Java's check is lopsided); equal objects
/// are TRUE; otherwise `__compare` decides, and may throw.
fn equal(lv: Value<'_>, rv: Value<'_>) -> Result<Option<bool>, Abort> {
    Ok(match (lv, rv) {
        (Value::Null, Value::Null) => Some(true),
        (Value::Null, _) => None,
        (_, Value::Null) => Some(false),
        _ if java_equals(lv, rv) => Some(true),
        _ => Some(java_compare(lv, rv)? == Ordering::Equal),
    })
}

/// `ComparisonExpression.evaluate` for `> >= < <=`: unknown when the left side
/// is null (the right side is then not evaluated) or the right side is null;
/// two Strings are both parsed as doubles; other pairs go through `__compare`.
fn order<'a, 'p: 'a>(
    op: OrderOp,
    lv: Value<'a>,
    right: &'a Expr,
    props: Props<'_, 'p>,
) -> Result<Option<bool>, Abort> {
    if lv == Value::Null {
        return Ok(None);
    }
    let rv = evaluate(right, props)?;
    let ord = match (lv, rv) {
        (_, Value::Null) => return Ok(None),
        (Value::Str(a), Value::Str(b)) => java_double_cmp(java_double(a)?, java_double(b)?),
        _ => java_compare(lv, rv)?,
    };
    Ok(Some(match op {
        OrderOp::Gt => ord == Ordering::Greater,
        OrderOp::Ge => ord != Ordering::Less,
        OrderOp::Lt => ord == Ordering::Less,
        OrderOp::Le => ord != Ordering::Greater,
    }))
}

#[cfg(test)]
#[path = "eval_tests.rs"]
mod tests;
