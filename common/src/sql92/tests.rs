//! Tests of the public API: [`Sql92Filter`] and [`Sql92Error`].

use super::*;
use std::collections::HashMap;

fn filter(src: &str) -> Sql92Filter {
    match Sql92Filter::parse(src) {
        Ok(f) => f,
        Err(e) => panic!("{src:?} was refused: {e}"),
    }
}

fn props(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The broker's shape: properties decoded into a map, looked up by a closure
/// that borrows it.
fn matches_map(f: &Sql92Filter, map: &HashMap<String, String>) -> bool {
    f.matches(&|name| map.get(name).map(String::as_str))
}

#[test]
fn the_issue_example_matches_only_when_both_sides_are_true() {
    let f = filter("a > 5 AND b = 'x'");
    assert!(matches_map(&f, &props(&[("a", "6"), ("b", "x")])));
    assert!(matches_map(
        &f,
        &props(&[("a", "100"), ("b", "x"), ("c", "y")])
    ));
    assert!(!matches_map(&f, &props(&[("a", "5"), ("b", "x")])));
    assert!(!matches_map(&f, &props(&[("a", "6"), ("b", "y")])));
    assert!(!matches_map(&f, &props(&[("a", "6"), ("b", "X")])));
    // Unknown: a property is missing.
    assert!(!matches_map(&f, &props(&[("b", "x")])));
    assert!(!matches_map(&f, &props(&[("a", "6")])));
    assert!(!matches_map(&f, &props(&[])));
    // Java's Integer.valueOf("6.5") throws: no match.
    assert!(!matches_map(&f, &props(&[("a", "6.5"), ("b", "x")])));
    assert_eq!(f.to_string(), "a > 5 AND b = 'x'");
}

#[test]
fn tags_is_an_ordinary_property() {
    let f = filter("TAGS IN ('TagA', 'TagC') OR TAGS IS NULL");
    assert!(f.matches(&|n| (n == "TAGS").then_some("TagA")));
    assert!(!f.matches(&|n| (n == "TAGS").then_some("TagB")));
    assert!(f.matches(&|_| None));
    // Property names are case-sensitive.
    assert!(!filter("tags = 'TagA'").matches(&|n| (n == "TAGS").then_some("TagA")));
}

#[test]
fn an_unknown_result_or_a_java_exception_is_no_match() {
    assert!(!filter("NULL").matches(&|_| None));
    assert!(!filter("NOT NULL").matches(&|_| None));
    assert!(filter("TRUE").matches(&|_| None));
    assert!(!filter("a > 5 OR TRUE").matches(&|_| Some("not a number")));
    assert!(filter("TRUE OR a > 5").matches(&|_| Some("not a number")));
}

#[test]
fn the_filter_is_a_shareable_value() {
    fn assert_traits<T: Clone + std::fmt::Debug + Send + Sync + 'static>() {}
    assert_traits::<Sql92Filter>();
    assert_traits::<Sql92Error>();
    let f = filter("a = 1");
    let g = f.clone();
    assert_eq!(f, g);
    let handle = std::thread::spawn(move || g.matches(&|_| Some("1")));
    assert!(matches!(handle.join(), Ok(true)));
}

#[test]
fn over_long_expressions_are_refused_up_front() {
    let body = "a = 'x' OR ".repeat(MAX_EXPRESSION_BYTES / 11);
    let fits = format!("{body}TRUE");
    assert!(fits.len() <= MAX_EXPRESSION_BYTES);
    assert!(filter(&fits).matches(&|_| None));
    let too_long = format!("{fits}{}", " ".repeat(MAX_EXPRESSION_BYTES));
    assert_eq!(
        Sql92Filter::parse(&too_long),
        Err(Sql92Error::TooLong {
            len: too_long.len(),
            max: MAX_EXPRESSION_BYTES
        })
    );
}

/// Stack the deepest accepted expressions are checked against: a quarter of
/// the 2 MiB that std and tokio give a thread by default (in release builds
/// they need under 256 KiB).
const SMALL_STACK_BYTES: usize = 512 * 1024;

#[test]
fn the_deepest_accepted_expressions_fit_a_small_stack() {
    let run = || {
        let depth = MAX_NESTING_DEPTH - 1;
        let parens = format!("{}a = '1'{}", "(".repeat(depth), ")".repeat(depth));
        let nots = format!("{}a", "NOT ".repeat(depth));
        let negations = format!("{}a IS NULL", "- ".repeat(depth));
        let chain = format!("TRUE{}", " = TRUE".repeat(MAX_NESTING_DEPTH));
        let mixed = format!(
            "{}a = '1'{}",
            "NOT (".repeat(depth / 2),
            ")".repeat(depth / 2)
        );
        let mut results = Vec::new();
        for src in [parens, nots, negations, chain, mixed] {
            let f = filter(&src);
            assert_eq!(filter(&f.to_string()), f);
            results.push(f.matches(&|_| Some("1")));
        }
        results
    };
    let handle = std::thread::Builder::new()
        .stack_size(SMALL_STACK_BYTES)
        .spawn(run);
    let results = handle.map(|h| h.join());
    // A present property casts to FALSE, so 127 NOTs make it TRUE; 63 NOTs
    // over a TRUE comparison make it FALSE.
    assert!(matches!(results, Ok(Ok(r)) if r == [true, true, true, true, false]));
}

#[test]
fn errors_are_typed_and_positioned() {
    let at = |line, column| Position { line, column };
    let parse_err = |src: &str| match Sql92Filter::parse(src) {
        Err(e) => e,
        Ok(f) => panic!("{src:?} was accepted as {f}"),
    };
    assert!(
        matches!(parse_err("a = 'x"), Sql92Error::Lexical { position, .. } if position == at(1, 5))
    );
    assert!(
        matches!(parse_err("a =\n="), Sql92Error::Syntax { position, .. } if position == at(2, 1))
    );
    assert!(
        matches!(parse_err("a > 'x'"), Sql92Error::Invalid { position, .. } if position == at(1, 5))
    );
    let deep = format!("{}a", "-".repeat(MAX_NESTING_DEPTH));
    assert!(matches!(
        parse_err(&deep),
        Sql92Error::TooDeep {
            max: MAX_NESTING_DEPTH,
            ..
        }
    ));
}

#[test]
fn display_is_canonical_and_parses_back_to_the_same_filter() {
    let cases = [
        (
            "a=3 and b<>4 And c>5 AND d<=4",
            "a = 3 AND b <> 4 AND c > 5 AND d <= 4",
        ),
        (
            "(a not in ('6', '4')) or (b in ('3'))",
            "a NOT IN ('6', '4') OR b IN ('3')",
        ),
        (
            "a between -1 and +2.50 and not b",
            "a BETWEEN -1 AND 2.5 AND NOT b",
        ),
        (
            "not (x is not null) or - - y = 1L",
            "NOT (x IS NOT NULL) OR - -y = 1",
        ),
        ("TAGS = 'it''s' /* c */ -- done\n", "TAGS = 'it''s'"),
    ];
    for (src, canonical) in cases {
        let f = filter(src);
        assert_eq!(f.to_string(), canonical);
        assert_eq!(filter(canonical), f);
    }
}
