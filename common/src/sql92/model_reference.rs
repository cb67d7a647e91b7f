//! The reference evaluator of the model test, written apart from `eval.rs`
//! and `value.rs`: it walks the generated surface tree (binary AND/OR,
//! BETWEEN as AND/OR of two comparisons) and restates the Java conversion
//! rules in its own way.

use super::{Cond, Op, Operand};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// `Err(())` stands for "Java throws".
pub(super) type Tri = Result<Option<bool>, ()>;

#[derive(Debug, Clone, PartialEq)]
enum Rv {
    Missing,
    Text(String),
    Int(i64),
    Long(i64),
    Float(f64),
    Bool(bool),
}

fn value(o: &Operand, props: &BTreeMap<&str, String>) -> Rv {
    match o {
        Operand::Prop(n) => props.get(n).map_or(Rv::Missing, |v| Rv::Text(v.clone())),
        Operand::Int(v) if *v <= i64::from(i32::MAX) => Rv::Int(*v),
        Operand::Int(v) => Rv::Long(*v),
        Operand::Float(v) => Rv::Float(*v),
        Operand::Str(s) => Rv::Text((*s).to_owned()),
        Operand::Bool(b) => Rv::Bool(*b),
        Operand::Neg(inner) => match value(inner, props) {
            Rv::Int(v) => Rv::Int(-v),
            Rv::Long(v) => Rv::Long(-v),
            Rv::Float(v) => Rv::Float(-v),
            _ => Rv::Missing,
        },
    }
}

/// Java's `Double.valueOf`, restated: blanks trimmed, one sign, `NaN`,
/// `Infinity`, or a plain decimal with an optional f/F/d/D suffix.
fn double_of(text: &str) -> Result<f64, ()> {
    let t = text.trim_matches(|c: char| c <= ' ');
    let (sign, body) = match t.strip_prefix('-') {
        Some(rest) => (-1.0, rest),
        None => (1.0, t.strip_prefix('+').unwrap_or(t)),
    };
    if body == "NaN" {
        return Ok(f64::NAN);
    }
    if body == "Infinity" {
        return Ok(sign * f64::INFINITY);
    }
    let body = body.strip_suffix(|c| "fFdD".contains(c)).unwrap_or(body);
    let plain = body
        .chars()
        .all(|c| c.is_ascii_digit() || ".eE+-".contains(c));
    if !plain || body.starts_with(['+', '-']) || !body.chars().any(|c| c.is_ascii_digit()) {
        return Err(());
    }
    body.parse::<f64>().map(|v| sign * v).map_err(|_| ())
}

/// `Double.compareTo`, restated.
fn cmp_f64(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ if a < b => Ordering::Less,
        _ if a > b => Ordering::Greater,
        _ => (!a.is_sign_negative()).cmp(&!b.is_sign_negative()),
    }
}

/// A number's value converted to `other`'s number kind, parsing text.
fn as_kind_of(v: &Rv, other: &Rv) -> Result<Rv, ()> {
    Ok(match (v, other) {
        (Rv::Text(t), Rv::Int(_)) => Rv::Int(i64::from(t.parse::<i32>().map_err(|_| ())?)),
        (Rv::Text(t), Rv::Long(_)) => Rv::Long(t.parse::<i64>().map_err(|_| ())?),
        (Rv::Text(t), Rv::Float(_)) => Rv::Float(double_of(t)?),
        (Rv::Text(t), Rv::Bool(_)) => Rv::Bool(t.eq_ignore_ascii_case("true")),
        (v, _) => v.clone(),
    })
}

fn cmp(l: &Rv, r: &Rv) -> Result<Ordering, ()> {
    let (l, r) = match (l, r) {
        (Rv::Bool(_), Rv::Text(_)) => return Err(()),
        (Rv::Text(_), _) => (as_kind_of(l, r)?, r.clone()),
        (_, Rv::Text(_)) => (l.clone(), as_kind_of(r, l)?),
        _ => (l.clone(), r.clone()),
    };
    Ok(match (&l, &r) {
        (Rv::Text(a), Rv::Text(b)) => a.encode_utf16().cmp(b.encode_utf16()),
        (Rv::Bool(a), Rv::Bool(b)) => a.cmp(b),
        (Rv::Int(a) | Rv::Long(a), Rv::Int(b) | Rv::Long(b)) => a.cmp(b),
        (Rv::Float(a), Rv::Float(b)) => cmp_f64(*a, *b),
        (Rv::Float(a), Rv::Int(b) | Rv::Long(b)) => cmp_f64(*a, *b as f64),
        (Rv::Int(a) | Rv::Long(a), Rv::Float(b)) => cmp_f64(*a as f64, *b),
        _ => Ordering::Less,
    })
}

fn eq(l: &Rv, r: &Rv) -> Tri {
    match (l, r) {
        (Rv::Missing, Rv::Missing) => Ok(Some(true)),
        (Rv::Missing, _) => Ok(None),
        (_, Rv::Missing) => Ok(Some(false)),
        (Rv::Float(a), Rv::Float(b)) => Ok(Some(cmp_f64(*a, *b) == Ordering::Equal)),
        _ if std::mem::discriminant(l) == std::mem::discriminant(r) => Ok(Some(l == r)),
        _ => Ok(Some(cmp(l, r)? == Ordering::Equal)),
    }
}

fn order(op: Op, l: &Rv, r: &Rv) -> Tri {
    if *l == Rv::Missing || *r == Rv::Missing {
        return Ok(None);
    }
    let ord = match (l, r) {
        (Rv::Text(a), Rv::Text(b)) => cmp_f64(double_of(a)?, double_of(b)?),
        _ => cmp(l, r)?,
    };
    Ok(Some(match op {
        Op::Gt => ord == Ordering::Greater,
        Op::Ge => ord != Ordering::Less,
        Op::Lt => ord == Ordering::Less,
        Op::Le => ord != Ordering::Greater,
    }))
}

fn and(l: Tri, r: impl FnOnce() -> Tri) -> Tri {
    let l = l?;
    if l == Some(false) {
        return Ok(Some(false));
    }
    match (l, r()?) {
        (_, Some(false)) => Ok(Some(false)),
        (Some(true), Some(true)) => Ok(Some(true)),
        _ => Ok(None),
    }
}

fn or(l: Tri, r: impl FnOnce() -> Tri) -> Tri {
    let l = l?;
    if l == Some(true) {
        return Ok(Some(true));
    }
    match (l, r()?) {
        (_, Some(true)) => Ok(Some(true)),
        (Some(false), Some(false)) => Ok(Some(false)),
        _ => Ok(None),
    }
}

pub(super) fn reference(c: &Cond, props: &BTreeMap<&str, String>) -> Tri {
    let v = |o: &Operand| value(o, props);
    match c {
        Cond::Lit(b) => Ok(*b),
        Cond::Prop(n) => Ok(props.get(n).map(|_| false)),
        Cond::Eq(l, r, negated) => Ok(eq(&v(l), &v(r))?.map(|b| b != *negated)),
        Cond::Order(op, l, r) => order(*op, &v(l), &v(r)),
        Cond::Between(x, low, high, false) => and(order(Op::Ge, &v(x), &v(low)), || {
            order(Op::Le, &v(x), &v(high))
        }),
        Cond::Between(x, low, high, true) => or(order(Op::Lt, &v(x), &v(low)), || {
            order(Op::Gt, &v(x), &v(high))
        }),
        Cond::In(n, values, negated) => Ok(props
            .get(n)
            .map(|p| values.contains(&p.as_str()) != *negated)),
        Cond::IsNull(o, negated) => Ok(Some((v(o) == Rv::Missing) != *negated)),
        Cond::Not(inner) => Ok(reference(inner, props)?.map(|b| !b)),
        Cond::And(l, r) => and(reference(l, props), || reference(r, props)),
        Cond::Or(l, r) => or(reference(l, props), || reference(r, props)),
    }
}
