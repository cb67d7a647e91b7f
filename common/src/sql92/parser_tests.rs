//! Grammar and build-time checks of `parser.rs`, each against the Java code
//! that makes the same decision.

use super::*;
use crate::sql92::ast::Expr;

fn ok(src: &str) -> Expr {
    match parse(src) {
        Ok(expr) => expr,
        Err(e) => panic!("{src:?} was refused: {e}"),
    }
}

fn err(src: &str) -> Sql92Error {
    match parse(src) {
        Ok(expr) => panic!("{src:?} was accepted as {expr}"),
        Err(e) => e,
    }
}

/// The canonical text, which shows how the parser grouped the input.
fn canon(src: &str) -> String {
    ok(src).to_string()
}

fn assert_invalid(src: &str) {
    let e = err(src);
    assert!(matches!(e, Sql92Error::Invalid { .. }), "{src:?} gave {e}");
}

fn assert_syntax(src: &str, expected_part: &str) {
    match err(src) {
        Sql92Error::Syntax { expected, .. } => {
            assert!(
                expected.contains(expected_part),
                "{src:?}: expected {expected:?}"
            )
        }
        other => panic!("{src:?} gave {other}"),
    }
}

#[test]
fn precedence_is_or_and_equality_comparison_unary() {
    assert_eq!(canon("a=1 or b=2 and c=3"), "a = 1 OR b = 2 AND c = 3");
    assert_eq!(canon("(a=1 or b=2) and c=3"), "(a = 1 OR b = 2) AND c = 3");
    assert_eq!(canon("a>1 = b<2"), "a > 1 = b < 2");
    // SelectorParser.jj: NOT is a unaryExpr, so it binds tighter than "=".
    assert_eq!(canon("NOT a = 'x'"), "NOT a = 'x'");
    assert!(matches!(ok("NOT a = 'x'"), Expr::Equal { left, .. } if matches!(*left, Expr::Not(_))));
    assert_eq!(canon("NOT (a = 'x')"), "NOT (a = 'x')");
    // ...and NOT a > 1 orders a condition (checkLessThanOperand refuses it).
    assert_invalid("NOT a > 1");
    assert_eq!(canon("a = b = c"), "a = b = c");
    assert_eq!(canon("a = (b = c)"), "a = (b = c)");
}

#[test]
fn and_or_chains_are_flat() {
    let Expr::Or(items) = ok("a OR (b OR c) OR (d OR e)") else {
        panic!("not an OR")
    };
    assert_eq!(items.len(), 5);
    let Expr::And(items) = ok("(a AND b) AND c AND (d OR e)") else {
        panic!("not an AND")
    };
    assert_eq!(items.len(), 4);
}

#[test]
fn between_desugars_and_checks_literal_bounds() {
    assert_eq!(canon("a between 1 and 5"), "a BETWEEN 1 AND 5");
    assert_eq!(canon("a not between 1 and 5"), "a NOT BETWEEN 1 AND 5");
    assert_eq!(canon("a between 1 and 2 and b"), "a BETWEEN 1 AND 2 AND b");
    assert_eq!(canon("a between 5 and 5"), "a BETWEEN 5 AND 5");
    assert_eq!(canon("a between 1 and 2.5"), "a BETWEEN 1 AND 2.5");
    // ComparisonExpression.createBetween: literal bounds must be in order...
    assert_invalid("a between 10 and 0"); // ParserTest.testParse_illegalBetween
    assert_invalid("a between 2.5 and 2");
    assert_invalid("a between 3000000000 and 1");
    // ...but "-1" is a negation, not a literal, and NOT BETWEEN is unchecked.
    assert_eq!(canon("a between -1 and -5"), "a BETWEEN -1 AND -5");
    assert_eq!(canon("a not between 10 and 0"), "a NOT BETWEEN 10 AND 0");
    // checkLessThanOperand on value and bounds.
    assert_invalid("a between 'a' and 'b'");
    assert_invalid("a between NULL and 1");
    assert_invalid("a between TRUE and 1");
    assert_invalid("(a = 1) between 1 and 2");
    assert_eq!(canon("a between up and low"), "a BETWEEN up AND low");
    assert_syntax("a between 1 or 2", "AND");
    assert_syntax("a between 1", "AND");
}

#[test]
fn in_takes_a_property_and_string_literals() {
    assert_eq!(canon("a in ('3', '4', '5')"), "a IN ('3', '4', '5')");
    assert_eq!(canon("a NOT IN ('it''s')"), "a NOT IN ('it''s')");
    assert_eq!(canon("+a in ('x')"), "a IN ('x')");
    assert_eq!(canon("(a) in ('x')"), "a IN ('x')");
    // ComparisonExpression.createInFilter: a property on the left.
    assert_invalid("'a' in ('x')");
    assert_invalid("-a in ('x')");
    assert_syntax("a in ()", "string literal");
    assert_syntax("a in (1)", "string literal");
    assert_syntax("a in ('x' 'y')", "')'");
    assert_syntax("a in 'x'", "'('");
}

#[test]
fn is_null_and_is_not_null() {
    assert_eq!(canon("a is null"), "a IS NULL");
    assert_eq!(canon("a IS NOT NULL"), "a IS NOT NULL");
    assert_eq!(canon("a = b is null"), "a = b IS NULL");
    assert_syntax("a is 5", "NULL or NOT NULL");
    assert_syntax("a is not 5", "NULL");
}

#[test]
fn equality_refuses_null_and_boolean_against_other_literals() {
    // ComparisonExpression.checkEqualOperand.
    assert_invalid("a = NULL");
    assert_invalid("NULL = a");
    assert_invalid("a <> NULL");
    // checkEqualOperandCompatability looks at the left side only.
    assert_invalid("TRUE = 'x'");
    assert_invalid("FALSE <> 1");
    assert_eq!(canon("'x' = TRUE"), "'x' = TRUE");
    assert_eq!(canon("1 = TRUE"), "1 = TRUE");
    assert_eq!(canon("TRUE = FALSE"), "TRUE = FALSE");
    assert_eq!(canon("TRUE = a"), "TRUE = a");
}

#[test]
fn ordering_takes_only_numbers_properties_and_negations() {
    assert_eq!(canon("a > b"), "a > b");
    assert_eq!(canon("-a >= 5"), "-a >= 5");
    assert_eq!(canon("5 < 3"), "5 < 3");
    // ComparisonExpression.checkLessThanOperand.
    for src in [
        "a > 'x'",
        "'x' < a",
        "a >= TRUE",
        "a <= NULL",
        "a > 1 > 2",
        "(a = 1) < 2",
        "a < (b IN ('x'))",
    ] {
        assert_invalid(src);
    }
}

#[test]
fn only_conditions_may_stand_alone_or_be_combined() {
    // SelectorParser.asBooleanExpression: a property is cast, a literal
    // string or number, or a negation, is refused.
    assert!(matches!(ok("a"), Expr::BoolCast(_)));
    assert!(matches!(ok("NOT a"), Expr::Not(_)));
    assert_eq!(canon("TRUE"), "TRUE");
    assert_eq!(canon("null"), "NULL");
    assert_eq!(canon("NULL AND a"), "NULL AND a");
    for src in ["5", "'x'", "-a", "'x' AND a", "a OR 1.5", "NOT 5", "NOT -a"] {
        assert_invalid(src);
    }
}

#[test]
fn literals_follow_constant_expression() {
    let literal = |src: &str| match ok(&format!("a > {src}")) {
        Expr::Order { right, .. } => *right,
        other => panic!("{other:?}"),
    };
    assert_eq!(literal("2147483647"), Expr::Literal(Literal::Int(i32::MAX)));
    assert_eq!(
        literal("2147483648"),
        Expr::Literal(Literal::Long(2_147_483_648))
    );
    assert_eq!(literal("10L"), Expr::Literal(Literal::Int(10)));
    assert_eq!(
        literal("9223372036854775807"),
        Expr::Literal(Literal::Long(i64::MAX))
    );
    assert_eq!(literal("0"), Expr::Literal(Literal::Int(0)));
    assert_eq!(literal("+5"), Expr::Literal(Literal::Int(5)));
    assert_eq!(literal("3.1E10"), Expr::Literal(Literal::Double(3.1e10)));
    assert_eq!(literal("5."), Expr::Literal(Literal::Double(5.0)));
    assert_eq!(
        literal("4.9e-324"),
        Expr::Literal(Literal::Double(f64::from_bits(1)))
    );
    assert!(matches!(literal("-5"), Expr::Negate(_)));
    // createFromDecimal: a long at most (ParserTest.testParse_decimalOverFlow).
    assert_invalid("a > 9223372036854775808");
    assert_invalid("a > 100000000000000000000000");
    // createFloat: Double.MIN_VALUE..=Double.MAX_VALUE, so no zero.
    for src in ["a > 1e309", "a > 0.0", "a > .0", "a > 0e1", "a > 1e-400"] {
        assert_invalid(src);
    }
    // "012" is "0" then "12": two operands in a row.
    assert_syntax("a > 012", "end of the expression");
}

#[test]
fn errors_name_position_expected_and_found() {
    assert_eq!(
        err("a = 1 b = 2").to_string(),
        "SQL92 syntax error at line 1, column 7: expected AND, OR, a comparison \
         or the end of the expression, found identifier b"
    );
    assert_eq!(
        err("a >\n  ").to_string(),
        "SQL92 syntax error at line 2, column 3: expected a literal, a property name, \
         '(', '+', '-' or NOT, found end of input"
    );
    assert_eq!(
        err("a = 1 AND b > 'x'").to_string(),
        "SQL92 expression invalid at line 1, column 15: 'x' cannot be compared with >"
    );
    assert_syntax("", "a literal");
    assert_syntax("(a = 1", "')'");
    assert_syntax("a and between 2 and 10", "a literal"); // ParserTest.testParse_invalid
    assert_syntax("a NOT LIKE 'x'", "BETWEEN or IN after NOT");
    // 5.1.3's CONTAINS / STARTSWITH / ENDSWITH are not 4.9 keywords.
    assert_syntax("a CONTAINS 'x'", "end of the expression");
    assert_syntax("a STARTSWITH 'x'", "end of the expression");
    assert_syntax(
        "a = 1 -- no line break, so two minus signs",
        "end of the expression",
    );
    assert!(matches!(err("a = 'x"), Sql92Error::Lexical { .. }));
}

#[test]
fn rocketmq_parser_test_expressions_are_valid() {
    // ParserTest.testParse_valid, plus comments and blanks.
    for src in [
        "a=3 and b<>4 And c>5 AND d<=4",
        "a=3  and    b<>4 And c>5 AND d<=4",
        "a=3 or b<>4 Or c>5 OR d<=4",
        "a in ('3', '4', '5')",
        "(a not in ('6', '4', '5')) or (b in ('3', '4', '5'))",
        "(a between 2 and 10) AND (b not between 6 and 9)",
        "a is null",
        "a is not null",
        "a <= now",
        "TAGS is not null and TAGS='''''tag'''''",
        "a = 1 -- trailing comment\n",
        "/* lead */ a = 1",
    ] {
        let tree = ok(src);
        assert_eq!(ok(&tree.to_string()), tree, "{src:?} did not round-trip");
    }
}

#[test]
fn nesting_is_capped_before_the_stack_is() {
    let parens = |n: usize| format!("{}a = 1{}", "(".repeat(n), ")".repeat(n));
    // The top level counts as one, so MAX - 1 parentheses fit.
    let deepest = ok(&parens(MAX_NESTING_DEPTH - 1));
    assert_eq!(ok(&deepest.to_string()), deepest);
    assert!(matches!(
        err(&parens(MAX_NESTING_DEPTH)),
        Sql92Error::TooDeep { .. }
    ));
    let nots = |n: usize| format!("{}a", "NOT ".repeat(n));
    let deepest = ok(&nots(MAX_NESTING_DEPTH - 1));
    assert_eq!(ok(&deepest.to_string()), deepest);
    assert!(matches!(
        err(&nots(MAX_NESTING_DEPTH)),
        Sql92Error::TooDeep { .. }
    ));
    // Chained comparisons add height without recursion.
    let chain = |n: usize| format!("a{}", " = a".repeat(n));
    let deepest = ok(&chain(MAX_NESTING_DEPTH));
    assert_eq!(ok(&deepest.to_string()), deepest);
    assert!(matches!(
        err(&chain(MAX_NESTING_DEPTH + 1)),
        Sql92Error::TooDeep { .. }
    ));
    // Hostile inputs fail fast instead of overflowing the stack.
    for hostile in [
        "(".repeat(60_000),
        "-".repeat(60_000),
        "NOT ".repeat(15_000),
    ] {
        assert!(matches!(err(&hostile), Sql92Error::TooDeep { .. }));
    }
    // Long AND / OR chains are flat, so they are not capped by depth.
    let wide = vec!["a = '1'"; 5_000].join(" OR ");
    assert!(matches!(ok(&wide), Expr::Or(items) if items.len() == 5_000));
}
