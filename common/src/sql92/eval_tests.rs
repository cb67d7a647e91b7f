//! Evaluation rules of `eval.rs` and `value.rs`, each named after the Java
//! code it reproduces. `T`, `F` and `U` are TRUE, FALSE and unknown; `abort`
//! is a Java exception, which the broker turns into "no match".

use super::*;
use crate::sql92::parser::parse;

type Outcome = Result<Option<bool>, Abort>;
const T: Outcome = Ok(Some(true));
const F: Outcome = Ok(Some(false));
const U: Outcome = Ok(None);

fn run(src: &str, props: &[(&str, &str)]) -> Outcome {
    let expr = match parse(src) {
        Ok(expr) => expr,
        Err(e) => panic!("{src:?} was refused: {e}"),
    };
    let lookup = |name: &str| props.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
    condition(&expr, &lookup)
}

/// Checks `src` with property `a` set to each value (`None`: missing).
fn check_a(src: &str, cases: &[(Option<&str>, Outcome)]) {
    for (value, want) in cases {
        let props: Vec<(&str, &str)> = value.iter().map(|v| ("a", *v)).collect();
        let got = run(src, &props);
        let same = match (want, &got) {
            (Err(_), Err(_)) => true,
            _ => *want == got,
        };
        assert!(
            same,
            "{src:?} with a = {value:?}: want {want:?}, got {got:?}"
        );
    }
}

const ABORT: Outcome = Err(Abort("expected"));

#[test]
fn string_property_against_int_literal_parses_a_java_int() {
    // ComparisonExpression.__compare: String vs Integer -> Integer.valueOf.
    check_a(
        "a > 5",
        &[
            (Some("10"), T),
            (Some("5"), F),
            (Some("+7"), T),
            (Some("-7"), F),
            (Some("10.5"), ABORT),
            (Some(" 10"), ABORT),
            (Some("abc"), ABORT),
            (Some(""), ABORT),
            (Some("3000000000"), ABORT),
            (None, U),
        ],
    );
    check_a(
        "a = 5",
        &[
            (Some("5"), T),
            (Some("05"), T),
            (Some("6"), F),
            (Some("5.0"), ABORT),
        ],
    );
    check_a(
        "a <> 5",
        &[
            (Some("6"), T),
            (Some("5"), F),
            (Some("x"), ABORT),
            (None, U),
        ],
    );
    // Integer vs String, the literal on the left.
    check_a("5 < a", &[(Some("6"), T), (Some("x"), ABORT)]);
}

#[test]
fn string_property_against_long_and_double_literals() {
    // String vs Long -> Long.valueOf.
    check_a(
        "a > 3000000000",
        &[
            (Some("3000000001"), T),
            (Some("10"), F),
            (Some("1.5"), ABORT),
        ],
    );
    // String vs Double -> Double.valueOf, which trims and takes suffixes.
    check_a(
        "a > 3.14",
        &[
            (Some("3.1415"), T), // ExpressionTest.testEvaluate_floatNumber
            (Some(" 4 "), T),
            (Some("4f"), T),
            (Some("NaN"), T),
            (Some("-Infinity"), F),
            (Some("3"), F),
            (Some("abc"), ABORT),
            (Some("0x10p0"), ABORT),
        ],
    );
    // ExpressionTest.testEvaluate_exponent: String.valueOf(3.1415E10).
    check_a("a > 3.1E10", &[(Some("3.1415E10"), T)]);
    check_a(
        "a = 5.0",
        &[(Some("5"), T), (Some("5.00"), T), (Some("5.1"), F)],
    );
    // A string literal is compared as a string, never converted.
    check_a(
        "a = '5'",
        &[(Some("5"), T), (Some("05"), F), (Some("5.0"), F)],
    );
    check_a("a = 'x'", &[(Some("X"), F), (Some("x"), T)]);
}

#[test]
fn two_properties_order_as_doubles_and_equal_as_strings() {
    // ComparisonExpression.evaluate: two Strings under > >= < <= are both
    // parsed with Double.valueOf.
    assert_eq!(run("a > b", &[("a", "10"), ("b", "20")]), F); // testEvaluate_twoVariable
    assert_eq!(run("a > b", &[("a", "20"), ("b", "10")]), T); // testEvaluate_twoVariableGt
    assert_eq!(run("a > b", &[("a", "1e1"), ("b", "9.5")]), T);
    assert_eq!(run("a > b", &[("a", "NaN"), ("b", "1")]), T);
    assert!(run("a > b", &[("a", "x"), ("b", "1")]).is_err());
    assert_eq!(run("a > b", &[("a", "1")]), U);
    // doCreateEqual: String.equals, then String.compareTo.
    assert_eq!(run("a = b", &[("a", "3.14"), ("b", "3.14")]), T);
    assert_eq!(run("a = b", &[("a", "3.14"), ("b", "3.140")]), F);
    assert_eq!(run("a <> b", &[("a", "3.14"), ("b", "3.141")]), T);
}

#[test]
fn numbers_widen_to_the_wider_type() {
    // __compare: Integer -> Long -> Double.
    assert_eq!(run("5 = 5.0", &[]), T);
    assert_eq!(run("1 = 1L", &[]), T);
    assert_eq!(run("3000000000 = 3000000000.0", &[]), T);
    assert_eq!(run("2147483647 < 2147483648", &[]), T);
    // UnaryExpression.createNegate keeps the type: -2147483648 is a Long.
    check_a("a = -2147483648", &[(Some("-2147483648"), T)]);
    assert_eq!(run("- -5 = 5", &[]), T);
    assert_eq!(run("-5 < -4.5", &[]), T);
}

#[test]
fn booleans_compare_through_boolean_value_of() {
    // __compare: String vs Boolean -> Boolean.valueOf ("true", any case).
    check_a(
        "a = TRUE",
        &[
            (Some("true"), T),
            (Some("TRUE"), T),
            (Some("yes"), F),
            (Some("1"), F),
            (None, U),
        ],
    );
    // ExpressionTest.testEvaluate_boolean.
    assert_eq!(
        run("a=TRUE OR b=FALSE", &[("a", "true"), ("b", "false")]),
        T
    );
    assert_eq!(
        run("a=TRUE OR b=FALSE", &[("a", "false"), ("b", "true")]),
        F
    );
    // Boolean vs String casts the Boolean to String: ClassCastException.
    check_a("TRUE = a", &[(Some("true"), ABORT), (None, F)]);
    check_a("TRUE <> a", &[(None, T)]);
    check_a("(a > 1) = 'true'", &[(Some("5"), ABORT)]);
    // Boolean vs a number has no rule: "less", so never equal.
    check_a("(a > 1) = 1", &[(Some("5"), F)]);
    check_a(
        "(a > 1) = TRUE",
        &[(Some("5"), T), (Some("0"), F), (None, U)],
    );
    assert_eq!(run("TRUE = FALSE", &[]), F);
}

#[test]
fn a_property_standing_alone_is_never_true() {
    // UnaryExpression.createBooleanCast: a String is not a Boolean.
    check_a("a", &[(Some("true"), F), (Some("x"), F), (None, U)]);
    check_a("NOT a", &[(Some("true"), T), (Some(""), T), (None, U)]);
}

#[test]
fn missing_properties_are_null() {
    // MessageEvaluationContext.get returns null; doCreateEqual is lopsided.
    check_a("a = 'x'", &[(None, U)]);
    check_a("a <> 'x'", &[(None, U)]);
    check_a("'x' = a", &[(None, F)]);
    check_a("'x' <> a", &[(None, T)]);
    assert_eq!(run("a = b", &[]), T);
    assert_eq!(run("a = b", &[("a", "1")]), F);
    assert_eq!(run("a = b", &[("b", "1")]), U);
    // createIsNull / createIsNotNull are never unknown.
    check_a("a IS NULL", &[(None, T), (Some(""), F)]);
    check_a("a IS NOT NULL", &[(None, F), (Some(""), T)]);
    // A negated String is null.
    check_a("-a IS NULL", &[(Some("5"), T)]);
    check_a("-a > 5", &[(Some("-10"), U)]);
    // ExpressionTest.testEvaluate_nullOr and testEvaluate_equal.
    check_a(
        "a is null OR a='hello'",
        &[(None, T), (Some("hello"), T), (Some("abc"), F)],
    );
    check_a(
        "a is not null and a='hello'",
        &[(Some("hello"), T), (None, F)],
    );
}

#[test]
fn logic_is_three_valued() {
    // LogicExpression.createAND / createOR, UnaryExpression.createNOT.
    let lit = |v: Option<bool>| match v {
        Some(true) => "TRUE",
        Some(false) => "FALSE",
        None => "NULL",
    };
    let all = [Some(true), Some(false), None];
    for l in all {
        assert_eq!(run(&format!("NOT {}", lit(l)), &[]), Ok(l.map(|b| !b)));
        for r in all {
            let and = match (l, r) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            };
            let or = match (l, r) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            };
            assert_eq!(run(&format!("{} AND {}", lit(l), lit(r)), &[]), Ok(and));
            assert_eq!(run(&format!("{} OR {}", lit(l), lit(r)), &[]), Ok(or));
        }
    }
}

#[test]
fn a_java_exception_drops_the_message_unless_short_circuited() {
    let props = [("a", "abc"), ("b", "x")];
    // ExpressionMessageFilter catches the exception: no match at all.
    assert!(run("a > 5 OR b = 'x'", &props).is_err());
    assert!(run("NOT (a > 5)", &props).is_err());
    // LogicExpression stops before the throwing operand.
    assert_eq!(run("b = 'x' OR a > 5", &props), T);
    assert_eq!(run("b = 'y' AND a > 5", &props), F);
    assert!(run("c > 5 AND a > 5", &props).is_err());
}

#[test]
fn between_is_and_of_two_comparisons() {
    // ComparisonExpression.createBetween / createNotBetween.
    check_a(
        "a between 2 and 10",
        &[
            (Some("2"), T),
            (Some("10"), T),
            (Some("11"), F),
            (Some("1"), F),
            (None, U),
            (Some("abc"), ABORT),
            (Some("2.5"), ABORT),
        ],
    );
    check_a(
        "a not between 2 and 10",
        &[(Some("1"), T), (Some("11"), T), (Some("5"), F), (None, U)],
    );
    check_a("a between 1.0 and 2.0", &[(Some("1.5"), T)]);
    // ExpressionTest.testEvaluate_stringCompare: bounds are properties.
    assert_eq!(run("a between up and low", &[("a", "3.14")]), U);
    assert!(run(
        "a between up and low",
        &[("a", "3.14"), ("up", "up"), ("low", "low")]
    )
    .is_err());
    assert_eq!(
        run(
            "a between up and low",
            &[("a", "3"), ("up", "1"), ("low", "5")]
        ),
        T
    );
    // An unknown bound: FALSE on the other side still decides.
    assert_eq!(run("a between 1 and b", &[("a", "5")]), U);
    assert_eq!(run("a between 1 and b", &[("a", "0")]), F);
    assert_eq!(run("a not between 1 and b", &[("a", "0")]), T);
    assert_eq!(run("a not between 1 and b", &[("a", "5")]), U);
}

#[test]
fn in_is_exact_string_membership() {
    // UnaryExpression.createInExpression.
    check_a(
        "a in ('3', '4', '5')",
        &[(Some("3"), T), (Some("6"), F), (Some(" 3"), F), (None, U)],
    );
    check_a(
        "a not in ('3', '4', '5')",
        &[(Some("6"), T), (Some("3"), F), (None, U)],
    );
    assert_eq!(run("TAGS IN ('TagA', 'TagB')", &[("TAGS", "TagB")]), T);
    // ExpressionTest.testEvaluate_stringHasString.
    let tags = [("TAGS", "''tag''")];
    assert_eq!(run("TAGS is not null and TAGS='''''tag'''''", &tags), T);
}

#[test]
fn double_order_is_java_compare_to() {
    // Double.compareTo: NaN above everything, -0.0 below 0.0.
    check_a("a < 1.0", &[(Some("NaN"), F), (Some("-0.0"), T)]);
    assert_eq!(run("a = b", &[("a", "NaN"), ("b", "NaN")]), T);
    assert_eq!(run("a >= b", &[("a", "NaN"), ("b", "NaN")]), T);
    assert_eq!(run("a < b", &[("a", "-0.0"), ("b", "0")]), T);
    assert_eq!(run("a <= b", &[("a", "0"), ("b", "-0.0")]), F);
}
