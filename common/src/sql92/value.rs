//! Runtime values and the Java conversions RocketMQ applies when comparing
//! them (`ComparisonExpression.__compare` with `convertStringExpressions` on,
//! which `SelectorParser.parse` always sets).
//!
//! A message property is always a Java `String`; literals are `Integer`,
//! `Long`, `Double`, `String` or `Boolean`; negation keeps the number type.
//! `Byte`, `Short` and `Float` never occur, so their conversion branches are
//! left out.

use std::cmp::Ordering;

/// A value during evaluation. `Null` is SQL's unknown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value<'a> {
    Null,
    Bool(bool),
    Int(i32),
    Long(i64),
    Double(f64),
    Str(&'a str),
}

/// Java threw while evaluating (`NumberFormatException` wrapped in a
/// `RuntimeException`, or a `ClassCastException`). The broker's
/// `ExpressionMessageFilter.isMatchedByCommitLog` catches it and the message
/// does not match, however the rest of the expression would have turned out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Abort(pub(crate) &'static str);

/// `Integer.valueOf(String)`: optional sign, digits, no blanks. Java also
/// takes non-ASCII decimal digits (`Character.digit`), such as "٥"; those are
/// not numbers here.
pub(crate) fn java_int(s: &str) -> Result<i32, Abort> {
    s.parse().map_err(|_| Abort("property is not a Java int"))
}

/// `Long.valueOf(String)`.
pub(crate) fn java_long(s: &str) -> Result<i64, Abort> {
    s.parse().map_err(|_| Abort("property is not a Java long"))
}

/// `Boolean.valueOf(String)`: true only for "true" in any letter case.
pub(crate) fn java_boolean(s: &str) -> bool {
    s.eq_ignore_ascii_case("true")
}

/// `Double.valueOf(String)` (`FloatingDecimal.readJavaFormatString`): blanks
/// (chars up to U+0020) trimmed at both ends, an optional sign, then `NaN`,
/// `Infinity`, or decimal digits with an optional point and exponent, and one
/// optional `f`/`F`/`d`/`D` suffix. Java's hexadecimal form (`0x1p3`) is not
/// supported: it is treated as not a number.
pub(crate) fn java_double(s: &str) -> Result<f64, Abort> {
    const NOT_A_DOUBLE: Abort = Abort("property is not a Java double");
    let trimmed = s.trim_matches(|c: char| c <= ' ');
    let (negative, unsigned) = match trimmed.as_bytes().first() {
        Some(b'-') => (true, &trimmed[1..]),
        Some(b'+') => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    let magnitude = match unsigned {
        "NaN" => f64::NAN,
        "Infinity" => f64::INFINITY,
        _ => {
            let body = unsigned
                .strip_suffix(['f', 'F', 'd', 'D'])
                .unwrap_or(unsigned);
            if !is_decimal_float(body) {
                return Err(NOT_A_DOUBLE);
            }
            body.parse::<f64>().map_err(|_| NOT_A_DOUBLE)?
        }
    };
    Ok(if negative { -magnitude } else { magnitude })
}

/// `digits* ('.' digits*)? ([eE] [+-]? digits+)?` with at least one mantissa
/// digit: the only shapes handed to Rust's parser, which also accepts words
/// like "inf" that Java does not.
fn is_decimal_float(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let int_digits = digits(0);
    let mut i = int_digits;
    let mut frac_digits = 0;
    if b.get(i) == Some(&b'.') {
        frac_digits = digits(i + 1);
        i += 1 + frac_digits;
    }
    if int_digits + frac_digits == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exp_digits = digits(i);
        if exp_digits == 0 {
            return false;
        }
        i += exp_digits;
    }
    i == b.len()
}

/// `Double.compareTo`: numeric order, except that -0.0 is below 0.0 and NaN is
/// equal to itself and above everything (it compares `doubleToLongBits`).
pub(crate) fn java_double_cmp(a: f64, b: f64) -> Ordering {
    fn bits(x: f64) -> i64 {
        // doubleToLongBits: every NaN becomes the canonical one, and the bits
        // are read as a signed long.
        let canonical = if x.is_nan() { f64::NAN } else { x };
        canonical.to_bits() as i64
    }
    match a.partial_cmp(&b) {
        Some(Ordering::Less) => Ordering::Less,
        Some(Ordering::Greater) => Ordering::Greater,
        _ => bits(a).cmp(&bits(b)),
    }
}

/// `Object.equals` between two non-null values: same Java class and same
/// value (`Double.equals` compares bits, so NaN equals NaN and -0.0 does not
/// equal 0.0).
pub(crate) fn java_equals(l: Value<'_>, r: Value<'_>) -> bool {
    match (l, r) {
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::Int(a), Value::Int(b)) => a == b,
        (Value::Long(a), Value::Long(b)) => a == b,
        (Value::Double(a), Value::Double(b)) => java_double_cmp(a, b) == Ordering::Equal,
        (Value::Str(a), Value::Str(b)) => a == b,
        _ => false,
    }
}

/// `ComparisonExpression.__compare(lv, rv, true)` for two non-null values:
/// a number is widened to the other side's wider number type, a string is
/// parsed as the other side's type (a failed parse aborts), and pairs with no
/// rule compare as "less" (Java returns -1).
pub(crate) fn java_compare(l: Value<'_>, r: Value<'_>) -> Result<Ordering, Abort> {
    use Value::{Bool, Double, Int, Long, Str};
    Ok(match (l, r) {
        (Bool(a), Bool(b)) => a.cmp(&b),
        (Int(a), Int(b)) => a.cmp(&b),
        (Long(a), Long(b)) => a.cmp(&b),
        (Double(a), Double(b)) => java_double_cmp(a, b),
        // String.compareTo orders UTF-16 code units.
        (Str(a), Str(b)) => a.encode_utf16().cmp(b.encode_utf16()),

        (Int(a), Long(b)) => i64::from(a).cmp(&b),
        (Long(a), Int(b)) => a.cmp(&i64::from(b)),
        (Int(a), Double(b)) => java_double_cmp(f64::from(a), b),
        (Double(a), Int(b)) => java_double_cmp(a, f64::from(b)),
        // Java's (double) conversion of a long rounds to nearest, like `as`.
        (Long(a), Double(b)) => java_double_cmp(a as f64, b),
        (Double(a), Long(b)) => java_double_cmp(a, b as f64),

        (Int(a), Str(b)) => a.cmp(&java_int(b)?),
        (Str(a), Int(b)) => java_int(a)?.cmp(&b),
        (Long(a), Str(b)) => a.cmp(&java_long(b)?),
        (Str(a), Long(b)) => java_long(a)?.cmp(&b),
        (Double(a), Str(b)) => java_double_cmp(a, java_double(b)?),
        (Str(a), Double(b)) => java_double_cmp(java_double(a)?, b),
        (Str(a), Bool(b)) => java_boolean(a).cmp(&b),
        // The Boolean branch casts the Boolean itself to String: Java throws
        // ClassCastException.
        (Bool(_), Str(_)) => return Err(Abort("Boolean compared with a String")),

        (Bool(_), Int(_) | Long(_) | Double(_))
        | (Int(_) | Long(_) | Double(_), Bool(_))
        | (Value::Null, _)
        | (_, Value::Null) => Ordering::Less,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use Value::*;

    #[test]
    fn int_and_long_parse_like_java_value_of() {
        assert_eq!(java_int("+5"), Ok(5));
        assert_eq!(java_int("-0012"), Ok(-12));
        assert_eq!(java_int("2147483647"), Ok(i32::MAX));
        for bad in [
            "",
            "+",
            "-",
            " 5",
            "5 ",
            "5.0",
            "2147483648",
            "1e3",
            "0x10",
            "five",
        ] {
            assert!(java_int(bad).is_err(), "{bad:?}");
        }
        assert_eq!(java_long("2147483648"), Ok(2_147_483_648));
        assert!(java_long("9223372036854775808").is_err());
    }

    #[test]
    fn double_parses_like_java_double_value_of() {
        let ok = [
            ("2.75", 2.75),
            (" 7 ", 7.0),
            ("\t-2.5\n", -2.5),
            ("+.5", 0.5),
            ("5.", 5.0),
            ("1e3", 1000.0),
            ("1E+3", 1000.0),
            ("1.5f", 1.5),
            ("2D", 2.0),
            ("-Infinity", f64::NEG_INFINITY),
            ("1e99999", f64::INFINITY),
            ("1e-99999", 0.0),
        ];
        for (text, want) in ok {
            assert_eq!(java_double(text), Ok(want), "{text:?}");
        }
        assert!(java_double("NaN").is_ok_and(f64::is_nan));
        assert!(java_double("-NaN").is_ok_and(f64::is_nan));
        for bad in [
            "", " ", ".", "e5", "1e", "1e+", "inf", "infinity", "nan", "NaNd", "1.5fd", "1_0",
            "0x1p3", "1,5", "--1", "abc",
        ] {
            assert!(java_double(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn boolean_parses_like_java_boolean_value_of() {
        assert!(java_boolean("true") && java_boolean("TRUE") && java_boolean("tRuE"));
        assert!(!java_boolean("yes") && !java_boolean("1") && !java_boolean(" true"));
    }

    #[test]
    fn double_compare_is_java_total_order() {
        assert_eq!(java_double_cmp(-0.0, 0.0), Ordering::Less);
        assert_eq!(java_double_cmp(f64::NAN, f64::INFINITY), Ordering::Greater);
        assert_eq!(java_double_cmp(f64::NAN, -f64::NAN), Ordering::Equal);
        assert_eq!(java_double_cmp(1.0, 2.0), Ordering::Less);
        assert!(java_equals(Double(f64::NAN), Double(f64::NAN)));
        assert!(!java_equals(Double(0.0), Double(-0.0)));
        assert!(!java_equals(Int(1), Long(1)));
    }

    #[test]
    fn compare_widens_numbers_and_parses_strings_as_the_other_side() {
        assert_eq!(java_compare(Int(1), Long(1)), Ok(Ordering::Equal));
        assert_eq!(
            java_compare(Long(3_000_000_000), Int(1)),
            Ok(Ordering::Greater)
        );
        assert_eq!(java_compare(Int(1), Double(1.5)), Ok(Ordering::Less));
        assert_eq!(java_compare(Double(2.0), Long(2)), Ok(Ordering::Equal));
        assert_eq!(java_compare(Str("10"), Int(5)), Ok(Ordering::Greater));
        assert_eq!(java_compare(Int(5), Str("+5")), Ok(Ordering::Equal));
        assert_eq!(java_compare(Str(" 5 "), Double(5.0)), Ok(Ordering::Equal));
        assert_eq!(
            java_compare(Str("3000000000"), Long(3_000_000_000)),
            Ok(Ordering::Equal)
        );
        assert_eq!(java_compare(Str("TRUE"), Bool(true)), Ok(Ordering::Equal));
        assert_eq!(java_compare(Str("yes"), Bool(false)), Ok(Ordering::Equal));
        assert_eq!(java_compare(Str("a"), Str("b")), Ok(Ordering::Less));
        // UTF-16 order: U+FF61 sorts after a surrogate pair (U+1F600).
        assert_eq!(
            java_compare(Str("\u{ff61}"), Str("\u{1f600}")),
            Ok(Ordering::Greater)
        );
    }

    #[test]
    fn compare_aborts_or_says_less_like_java() {
        assert!(java_compare(Str("10.5"), Int(5)).is_err());
        assert!(java_compare(Str(" 5"), Int(5)).is_err());
        assert!(java_compare(Str("3000000000"), Int(5)).is_err());
        assert!(java_compare(Int(5), Str("abc")).is_err());
        assert!(java_compare(Bool(true), Str("true")).is_err());
        assert_eq!(java_compare(Bool(true), Int(1)), Ok(Ordering::Less));
        assert_eq!(java_compare(Int(1), Bool(true)), Ok(Ordering::Less));
    }
}
