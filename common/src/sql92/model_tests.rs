//! Model-based property test: random expressions are generated as a small
//! surface-syntax tree, rendered to text in varied styles, parsed, and
//! evaluated against random property sets. A reference evaluator, written
//! separately over the generated tree (binary AND/OR, BETWEEN as AND of two
//! comparisons, its own Java number parsing), must agree on every outcome:
//! TRUE, FALSE, unknown, or "Java would throw".

use super::{eval, Sql92Filter};
use proptest::prelude::*;
use reference::{reference, Tri};
use std::collections::BTreeMap;

#[path = "model_reference.rs"]
mod reference;

const NAMES: [&str; 5] = ["a", "b", "c", "TAGS", "$x_1"];
const VALUES: [&str; 24] = [
    "5",
    "10",
    "-3",
    "0",
    "+7",
    "07",
    "2147483648",
    "3000000000",
    "3.5",
    "-0.0",
    "1e3",
    " 7 ",
    "4f",
    "NaN",
    "Infinity",
    "abc",
    "",
    "true",
    "TRUE",
    "false",
    "x",
    "it's",
    "TagA",
    "0.5",
];
const STRINGS: [&str; 8] = ["x", "TagA", "5", "it's", "", "true", "a b", "3.5"];

#[derive(Debug, Clone)]
enum Operand {
    Prop(&'static str),
    /// Non-negative; an `int` literal when it fits, else a `long`.
    Int(i64),
    /// Positive and finite.
    Float(f64),
    Str(&'static str),
    Bool(bool),
    Neg(Box<Operand>),
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Gt,
    Ge,
    Lt,
    Le,
}

#[derive(Debug, Clone)]
enum Cond {
    Lit(Option<bool>),
    Prop(&'static str),
    Eq(Operand, Operand, bool),
    Order(Op, Operand, Operand),
    Between(Operand, Operand, Operand, bool),
    In(&'static str, Vec<&'static str>, bool),
    IsNull(Operand, bool),
    Not(Box<Cond>),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
}

// ---- generation -------------------------------------------------------

fn arb_name() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(NAMES.to_vec())
}

fn arb_orderable() -> impl Strategy<Value = Operand> {
    let leaf = prop_oneof![
        3 => arb_name().prop_map(Operand::Prop),
        3 => (0i64..=12).prop_map(Operand::Int),
        1 => proptest::sample::select(vec![2_147_483_647i64, 2_147_483_648, 3_000_000_000]).prop_map(Operand::Int),
        2 => proptest::sample::select(vec![0.5, 3.5, 5.0, 1e3, 1e-3, 2.5e9, 7.25]).prop_map(Operand::Float),
    ];
    let neg = |o: Operand| Operand::Neg(Box::new(o));
    prop_oneof![
        4 => leaf.clone(),
        1 => leaf.clone().prop_map(neg),
        1 => leaf.prop_map(move |o| neg(neg(o))),
    ]
}

fn arb_operand() -> impl Strategy<Value = Operand> {
    prop_oneof![
        4 => arb_orderable(),
        2 => proptest::sample::select(STRINGS.to_vec()).prop_map(Operand::Str),
        1 => any::<bool>().prop_map(Operand::Bool),
    ]
}

fn is_literal(o: &Operand) -> bool {
    !matches!(o, Operand::Prop(_) | Operand::Neg(_))
}

/// `TRUE = 'x'` is refused by RocketMQ, `'x' = TRUE` is not: swap.
fn valid_eq(l: Operand, r: Operand, negated: bool) -> Cond {
    if matches!(l, Operand::Bool(_)) && is_literal(&r) && !matches!(r, Operand::Bool(_)) {
        Cond::Eq(r, l, negated)
    } else {
        Cond::Eq(l, r, negated)
    }
}

/// `BETWEEN` with two literal bounds must have them in order.
fn valid_between(v: Operand, low: Operand, high: Operand, negated: bool) -> Cond {
    let reversed = match (&low, &high) {
        (Operand::Int(l), Operand::Int(h)) => h < l,
        (Operand::Int(l), Operand::Float(h)) => *h < *l as f64,
        (Operand::Float(l), Operand::Int(h)) => (*h as f64) < *l,
        (Operand::Float(l), Operand::Float(h)) => h < l,
        _ => false,
    };
    if reversed && !negated {
        Cond::Between(v, high, low, negated)
    } else {
        Cond::Between(v, low, high, negated)
    }
}

fn arb_cond() -> impl Strategy<Value = Cond> {
    let op = proptest::sample::select(vec![Op::Gt, Op::Ge, Op::Lt, Op::Le]);
    let leaf = prop_oneof![
        1 => proptest::sample::select(vec![Some(true), Some(false), None]).prop_map(Cond::Lit),
        1 => arb_name().prop_map(Cond::Prop),
        3 => (arb_operand(), arb_operand(), any::<bool>()).prop_map(|(l, r, n)| valid_eq(l, r, n)),
        3 => (op, arb_orderable(), arb_orderable()).prop_map(|(op, l, r)| Cond::Order(op, l, r)),
        2 => (arb_orderable(), arb_orderable(), arb_orderable(), any::<bool>())
            .prop_map(|(v, l, h, n)| valid_between(v, l, h, n)),
        2 => (arb_name(), proptest::collection::vec(proptest::sample::select(STRINGS.to_vec()), 1..4), any::<bool>())
            .prop_map(|(p, vs, n)| Cond::In(p, vs, n)),
        1 => (arb_operand(), any::<bool>()).prop_map(|(o, n)| Cond::IsNull(o, n)),
    ];
    leaf.prop_recursive(5, 40, 2, |inner| {
        prop_oneof![
            1 => inner.clone().prop_map(|c| Cond::Not(Box::new(c))),
            2 => (inner.clone(), inner.clone()).prop_map(|(l, r)| Cond::And(Box::new(l), Box::new(r))),
            2 => (inner.clone(), inner).prop_map(|(l, r)| Cond::Or(Box::new(l), Box::new(r))),
        ]
    })
}

fn arb_props() -> impl Strategy<Value = BTreeMap<&'static str, String>> {
    let value = prop_oneof![
        3 => proptest::sample::select(VALUES.to_vec()).prop_map(str::to_owned),
        1 => (-20i64..20).prop_map(|v| v.to_string()),
        1 => (-20.0f64..20.0).prop_map(|v| v.to_string()),
    ];
    proptest::collection::btree_map(arb_name(), value, 0..=NAMES.len())
}

// ---- rendering ----------------------------------------------------------

/// Draws style choices (keyword case, spacing, comments, `L`) from random bits.
struct Style(u64);

impl Style {
    fn flip(&mut self) -> bool {
        self.0 = self.0.rotate_left(1) ^ 0x9e37_79b9_7f4a_7c15;
        self.0 & 1 == 1
    }

    fn kw(&mut self, word: &str) -> String {
        if self.flip() {
            word.to_lowercase()
        } else {
            word.to_owned()
        }
    }

    fn sp(&mut self) -> &'static str {
        match (self.flip(), self.flip(), self.flip()) {
            (true, true, true) => " /* c */ ",
            (true, true, false) => "\n ",
            (true, false, _) => "  ",
            _ => " ",
        }
    }

    fn operand(&mut self, o: &Operand) -> String {
        match o {
            Operand::Prop(name) => (*name).to_owned(),
            Operand::Int(v) if *v > 0 && *v <= i64::from(i32::MAX) && self.flip() => {
                format!("{v}L")
            }
            Operand::Int(v) => v.to_string(),
            Operand::Float(v) => format!("{v:?}"),
            Operand::Str(s) => format!("'{}'", s.replace('\'', "''")),
            Operand::Bool(b) => self.kw(if *b { "TRUE" } else { "FALSE" }),
            // A space keeps "- -x" from becoming a "--" comment.
            Operand::Neg(inner) if matches!(**inner, Operand::Neg(_)) => {
                format!("- {}", self.operand(inner))
            }
            Operand::Neg(inner) if self.flip() => format!("-({})", self.operand(inner)),
            Operand::Neg(inner) => format!("-{}", self.operand(inner)),
        }
    }

    fn cond(&mut self, c: &Cond) -> String {
        let not = |s: &mut Style, negated: bool| {
            if negated {
                format!("{} ", s.kw("NOT"))
            } else {
                String::new()
            }
        };
        match c {
            Cond::Lit(v) => self.kw(match v {
                Some(true) => "TRUE",
                Some(false) => "FALSE",
                None => "NULL",
            }),
            Cond::Prop(name) => (*name).to_owned(),
            Cond::Eq(l, r, negated) => {
                let (l, sp, r) = (self.operand(l), self.sp(), self.operand(r));
                format!("{l}{sp}{}{sp}{r}", if *negated { "<>" } else { "=" })
            }
            Cond::Order(op, l, r) => {
                let sym = match op {
                    Op::Gt => ">",
                    Op::Ge => ">=",
                    Op::Lt => "<",
                    Op::Le => "<=",
                };
                format!("{} {sym} {}", self.operand(l), self.operand(r))
            }
            Cond::Between(v, low, high, negated) => {
                let (v, n, b) = (self.operand(v), not(self, *negated), self.kw("BETWEEN"));
                let (low, and, high) = (self.operand(low), self.kw("AND"), self.operand(high));
                format!("{v} {n}{b} {low} {and} {high}")
            }
            Cond::In(name, values, negated) => {
                let list: Vec<String> = values
                    .iter()
                    .map(|s| format!("'{}'", s.replace('\'', "''")))
                    .collect();
                format!(
                    "{name} {}{} ({})",
                    not(self, *negated),
                    self.kw("IN"),
                    list.join(",")
                )
            }
            Cond::IsNull(o, negated) => {
                let (o, is, n, null) = (
                    self.operand(o),
                    self.kw("IS"),
                    not(self, *negated),
                    self.kw("NULL"),
                );
                format!("{o} {is} {n}{null}")
            }
            Cond::Not(inner) => format!("{} ({})", self.kw("NOT"), self.cond(inner)),
            Cond::And(l, r) => format!(
                "({}){}{}{}({})",
                self.cond(l),
                self.sp(),
                self.kw("AND"),
                self.sp(),
                self.cond(r)
            ),
            Cond::Or(l, r) => format!(
                "({}){}{}{}({})",
                self.cond(l),
                self.sp(),
                self.kw("OR"),
                self.sp(),
                self.cond(r)
            ),
        }
    }
}

// ---- properties ----------------------------------------------------------

fn outcome(filter: &Sql92Filter, props: &BTreeMap<&str, String>) -> Tri {
    let lookup = |name: &str| props.get(name).map(String::as_str);
    eval::condition(&filter.root, &lookup).map_err(|_| ())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn parsed_text_evaluates_like_the_reference(cond in arb_cond(), style in any::<u64>(), props in arb_props()) {
        let text = Style(style).cond(&cond);
        let filter = Sql92Filter::parse(&text).map_err(|e| TestCaseError::fail(format!("{text:?}: {e}")))?;
        let want = reference(&cond, &props);
        prop_assert_eq!(outcome(&filter, &props), want, "{} with {:?}", text, props);
        let lookup = |name: &str| props.get(name).map(String::as_str);
        prop_assert_eq!(filter.matches(&lookup), want == Ok(Some(true)));
    }

    #[test]
    fn canonical_text_parses_back_to_the_same_filter(cond in arb_cond(), style in any::<u64>(), props in arb_props()) {
        let text = Style(style).cond(&cond);
        let filter = Sql92Filter::parse(&text).map_err(|e| TestCaseError::fail(format!("{text:?}: {e}")))?;
        let canonical = filter.to_string();
        let again = Sql92Filter::parse(&canonical).map_err(|e| TestCaseError::fail(format!("{canonical:?}: {e}")))?;
        prop_assert_eq!(&again, &filter, "{} became {}", text, canonical);
        prop_assert_eq!(again.to_string(), canonical);
        prop_assert_eq!(outcome(&again, &props), outcome(&filter, &props));
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,60}", ascii in "[a-zA-Z0-9_$'()<>=,+\\-.* /\n]{0,60}") {
        for src in [&text, &ascii] {
            if let Ok(filter) = Sql92Filter::parse(src) {
                let _ = filter.matches(&|_| Some("1"));
                prop_assert!(Sql92Filter::parse(&filter.to_string()).is_ok());
            }
        }
    }
}
