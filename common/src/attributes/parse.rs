//! Parsing `+key=value,-key` and applying it to the attributes a topic has.

use std::collections::{BTreeMap, BTreeSet};

use super::{Attribute, AttributeError};

/// Java's `AttributeParser.parseToMap`: the items of `text` by their signed
/// key (`+k` to its value, `-k` to ""), in the order sent. Empty text is no
/// item. As Java's `split`, trailing empty items are dropped and a value
/// ends at a second `=`.
pub fn parse_to_map(text: &str) -> Result<Vec<(String, String)>, AttributeError> {
    let mut items: Vec<&str> = text.split(',').collect();
    while items.last() == Some(&"") {
        items.pop();
    }
    let mut out: Vec<(String, String)> = Vec::with_capacity(items.len());
    for item in items {
        let (key, value) = if item.contains('=') {
            let mut parts = item.split('=');
            let key = parts.next().unwrap_or_default();
            let Some(value) = parts.next().filter(|v| !v.is_empty()) else {
                return Err(AttributeError::NoValue(key.to_owned()));
            };
            if !key.contains('+') {
                return Err(AttributeError::AddFormat(key.to_owned()));
            }
            (key, value)
        } else {
            if !item.contains('-') {
                return Err(AttributeError::DeleteFormat(item.to_owned()));
            }
            (item, "")
        };
        if out.iter().any(|(k, _)| k == key) {
            return Err(AttributeError::Duplicate(key.to_owned()));
        }
        out.push((key.to_owned(), value.to_owned()));
    }
    Ok(out)
}

/// Java's `AttributeUtil.alterCurrentAttributes`: `changes` (signed keys,
/// from [`parse_to_map`]) applied to `current`, checked against `known`.
/// `create` is true when the topic is new: then only `+` items are allowed,
/// and unchangeable attributes may be set. Attributes not named are kept.
pub fn alter(
    create: bool,
    known: &[Attribute],
    current: &BTreeMap<String, String>,
    changes: &[(String, String)],
) -> Result<BTreeMap<String, String>, AttributeError> {
    let mut init = Vec::new();
    let mut add = Vec::new();
    let mut update = Vec::new();
    let mut delete = Vec::new();
    let mut seen = BTreeSet::new();
    for (key, value) in changes {
        let real = key.get(1..).unwrap_or_default();
        if real.is_empty() || real.contains('+') || real.contains('-') {
            return Err(AttributeError::KeyFormat);
        }
        if !seen.insert(real) {
            return Err(AttributeError::AlterDuplicate(real.to_owned()));
        }
        let item = (real, value.as_str());
        match key.as_bytes().first() {
            Some(b'+') if create => init.push(item),
            _ if create => return Err(AttributeError::OnlyAddOnCreate(real.to_owned())),
            Some(b'+') if current.contains_key(real) => update.push(item),
            Some(b'+') => add.push(item),
            Some(b'-') if current.contains_key(real) => delete.push(item),
            Some(b'-') => return Err(AttributeError::DeleteMissing(real.to_owned())),
            _ => return Err(AttributeError::NoSign(real.to_owned())),
        }
    }
    check(known, &init, true, false)?;
    check(known, &add, false, false)?;
    check(known, &update, false, false)?;
    check(known, &delete, false, true)?;
    let mut out = current.clone();
    for (k, v) in init.into_iter().chain(add).chain(update) {
        out.insert(k.to_owned(), v.to_owned());
    }
    for (k, _) in delete {
        out.remove(k);
    }
    Ok(out)
}

fn check(
    known: &[Attribute],
    items: &[(&str, &str)],
    init: bool,
    delete: bool,
) -> Result<(), AttributeError> {
    for (key, value) in items {
        let attribute = known
            .iter()
            .find(|a| a.name == *key)
            .ok_or_else(|| AttributeError::Unsupported((*key).to_owned()))?;
        if !init && !attribute.changeable {
            return Err(AttributeError::Unchangeable((*key).to_owned()));
        }
        if !delete {
            attribute.verify(value)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attributes::{AttributeError as E, GROUP_ATTRIBUTES, TOPIC_ATTRIBUTES};

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn apply(
        create: bool,
        current: &[(&str, &str)],
        text: &str,
    ) -> Result<Vec<(String, String)>, String> {
        let changes = parse_to_map(text).map_err(|e| e.to_string())?;
        alter(create, &TOPIC_ATTRIBUTES, &map(current), &changes)
            .map(|m| m.into_iter().collect())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn parse_as_java() {
        assert_eq!(parse_to_map("").unwrap(), vec![]);
        assert_eq!(
            parse_to_map("+a=1,-b,").unwrap(),
            vec![("+a".into(), "1".into()), ("-b".into(), String::new())]
        );
        assert_eq!(
            parse_to_map("+a=1=2").unwrap(),
            vec![("+a".into(), "1".into())]
        );
        assert_eq!(parse_to_map("a=1"), Err(E::AddFormat("a".into())));
        assert_eq!(parse_to_map("b"), Err(E::DeleteFormat("b".into())));
        assert_eq!(parse_to_map(",+a=1"), Err(E::DeleteFormat(String::new())));
        assert_eq!(parse_to_map("+a="), Err(E::NoValue("+a".into())));
        assert_eq!(parse_to_map("+a=1,+a=2"), Err(E::Duplicate("+a".into())));
        assert_eq!(
            E::NotInSet(vec!["X", "Y"]).to_string(),
            "value is not in set: [X, Y]"
        );
    }

    #[test]
    fn create_takes_only_additions_of_known_valid_attributes() {
        let ok = apply(true, &[], "+message.type=FIFO,+queue.type=BatchCQ").unwrap();
        assert_eq!(
            ok,
            vec![
                ("message.type".into(), "FIFO".into()),
                ("queue.type".into(), "BatchCQ".into())
            ]
        );
        assert_eq!(
            apply(true, &[], "-message.type").unwrap_err(),
            "only add attribute is supported while creating topic. key: message.type"
        );
        assert_eq!(
            apply(true, &[], "+colour=red").unwrap_err(),
            "unsupported key: colour"
        );
        assert!(apply(true, &[], "+message.type=fifo")
            .unwrap_err()
            .starts_with("value is not in set: [UNSPECIFIED, NORMAL"));
        assert_eq!(
            apply(true, &[], "+reserve.time=-2").unwrap_err(),
            format!("value is not in range(-1, {})", i64::MAX)
        );
        assert_eq!(
            apply(true, &[], "+-x=1").unwrap_err(),
            "kv string format wrong."
        );
        assert_eq!(
            apply(true, &[], "+message.type=FIFO,-message.type").unwrap_err(),
            "alter duplication key. key: message.type"
        );
    }

    #[test]
    fn update_adds_replaces_deletes_and_keeps_the_rest() {
        let current = [("message.type", "FIFO"), ("queue.type", "SimpleCQ")];
        assert_eq!(
            apply(false, &current, "+message.type=NORMAL").unwrap(),
            vec![
                ("message.type".into(), "NORMAL".into()),
                ("queue.type".into(), "SimpleCQ".into())
            ]
        );
        assert_eq!(
            apply(false, &current, "-message.type").unwrap(),
            vec![("queue.type".into(), "SimpleCQ".into())]
        );
        assert_eq!(
            apply(false, &[], "-message.type").unwrap_err(),
            "attempt to delete a nonexistent key: message.type"
        );
        assert_eq!(
            apply(false, &current, "+queue.type=BatchCQ").unwrap_err(),
            "attempt to update an unchangeable attribute. key: queue.type"
        );
        assert_eq!(
            apply(false, &current, "-queue.type").unwrap_err(),
            "attempt to update an unchangeable attribute. key: queue.type"
        );
        assert_eq!(
            apply(false, &[], "+cleanup.policy=DELETE").unwrap_err(),
            "attempt to update an unchangeable attribute. key: cleanup.policy"
        );
        // A key without a sign (only a map built by hand has one).
        let changes = vec![("xmessage.type".to_owned(), "FIFO".to_owned())];
        assert_eq!(
            alter(false, &TOPIC_ATTRIBUTES, &BTreeMap::new(), &changes)
                .unwrap_err()
                .to_string(),
            "wrong format key: message.type"
        );
    }

    #[test]
    fn groups_have_no_attribute_in_5_3_3() {
        let changes = parse_to_map("+any=1").unwrap();
        assert_eq!(
            alter(true, &GROUP_ATTRIBUTES, &BTreeMap::new(), &changes),
            Err(E::Unsupported("any".into()))
        );
    }
}
