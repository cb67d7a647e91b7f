//! Token rules of `lexer.rs`, against `SelectorParser.jj`'s TOKEN sections.

use super::*;

fn kinds(src: &str) -> Vec<Tok> {
    match tokenize(src) {
        Ok(tokens) => tokens.into_iter().map(|t| t.tok).collect(),
        Err(e) => panic!("{src:?} did not lex: {e}"),
    }
}

fn dec(s: &str) -> Tok {
    Tok::Decimal(s.into())
}

fn flt(s: &str) -> Tok {
    Tok::Float(s.into())
}

fn id(s: &str) -> Tok {
    Tok::Id(s.into())
}

#[test]
fn operators_take_the_longest_match() {
    use Tok::*;
    assert_eq!(
        kinds("= <> > >= < <= ( , ) + -"),
        [Eq, Ne, Gt, Ge, Lt, Le, LParen, Comma, RParen, Plus, Minus, Eof]
    );
    assert_eq!(kinds("a<>b"), [id("a"), Ne, id("b"), Eof]);
    assert_eq!(kinds("a>=1"), [id("a"), Ge, dec("1"), Eof]);
}

#[test]
fn keywords_ignore_case_and_lose_to_longer_identifiers() {
    use Tok::*;
    assert_eq!(
        kinds("not And oR BETWEEN in True false NuLL is"),
        [Not, And, Or, Between, In, True, False, Null, Is, Eof]
    );
    // JavaCC picks the longest match, so these are property names.
    assert_eq!(
        kinds("nothing INx TAGS $a _b9 now"),
        [
            id("nothing"),
            id("INx"),
            id("TAGS"),
            id("$a"),
            id("_b9"),
            id("now"),
            Eof
        ]
    );
}

#[test]
fn numbers_follow_decimal_and_floating_point_literal() {
    assert_eq!(
        kinds("0 7 123 10L 10l"),
        [
            dec("0"),
            dec("7"),
            dec("123"),
            dec("10L"),
            dec("10l"),
            Tok::Eof
        ]
    );
    // "0" never takes more digits nor the suffix.
    assert_eq!(kinds("012"), [dec("0"), dec("12"), Tok::Eof]);
    assert_eq!(kinds("0L"), [dec("0"), id("L"), Tok::Eof]);
    assert_eq!(
        kinds("5. .5 5.5 5E10 5e+3 5.E-2 .5e1 012.5 0e1"),
        [
            flt("5."),
            flt(".5"),
            flt("5.5"),
            flt("5E10"),
            flt("5e+3"),
            flt("5.E-2"),
            flt(".5e1"),
            flt("012.5"),
            flt("0e1"),
            Tok::Eof
        ]
    );
    // An incomplete exponent is not part of the number.
    assert_eq!(kinds("5e"), [dec("5"), id("e"), Tok::Eof]);
    assert_eq!(
        kinds("1.5e+x"),
        [flt("1.5"), id("e"), Tok::Plus, id("x"), Tok::Eof]
    );
    assert_eq!(kinds("1.2.3"), [flt("1.2"), flt(".3"), Tok::Eof]);
    assert_eq!(kinds("1e5L"), [flt("1e5"), id("L"), Tok::Eof]);
}

#[test]
fn strings_decode_doubled_quotes_and_keep_anything_else() {
    assert_eq!(kinds("'it''s'"), [Tok::Str("it's".into()), Tok::Eof]);
    assert_eq!(kinds("''"), [Tok::Str(String::new()), Tok::Eof]);
    assert_eq!(kinds("''''"), [Tok::Str("'".into()), Tok::Eof]);
    assert_eq!(
        kinds("'a\nb -- /* é'"),
        [Tok::Str("a\nb -- /* é".into()), Tok::Eof]
    );
    assert!(matches!(tokenize("'abc"), Err(Sql92Error::Lexical { .. })));
    assert!(matches!(tokenize("'ab''"), Err(Sql92Error::Lexical { .. })));
}

#[test]
fn comments_and_whitespace_are_skipped() {
    use Tok::*;
    assert_eq!(kinds(" \t\r\n\x0ca"), [id("a"), Eof]);
    assert_eq!(kinds("a -- note\n= 1"), [id("a"), Eq, dec("1"), Eof]);
    assert_eq!(kinds("a --note\r\n= 1"), [id("a"), Eq, dec("1"), Eof]);
    assert_eq!(kinds("a /* x * / ** */ = 1"), [id("a"), Eq, dec("1"), Eof]);
    // Without a line break "--" is two minus signs, as in JavaCC.
    assert_eq!(kinds("--5"), [Minus, Minus, dec("5"), Eof]);
    assert!(matches!(
        tokenize("a /* open"),
        Err(Sql92Error::Lexical { .. })
    ));
    assert!(matches!(tokenize("/*/"), Err(Sql92Error::Lexical { .. })));
}

#[test]
fn unknown_characters_are_lexical_errors_with_position() {
    for (src, column) in [
        ("a != 1", 3),
        ("a = 1 # x", 7),
        ("a.b = 1", 2),
        ("é = 1", 1),
        ("a\u{a0}= 1", 2),
    ] {
        match tokenize(src) {
            Err(Sql92Error::Lexical { position, .. }) => {
                assert_eq!(position, Position { line: 1, column }, "{src:?}");
            }
            other => panic!("{src:?} gave {other:?}"),
        }
    }
}

#[test]
fn tokens_carry_byte_offsets() {
    let tokens = tokenize("ab  >= 'x'").unwrap_or_default();
    let offsets: Vec<usize> = tokens.iter().map(|t| t.offset).collect();
    assert_eq!(offsets, [0, 4, 7, 10]);
}
