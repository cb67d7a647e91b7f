//! Protocol version numbers: the ordinals of Java's `MQVersion.Version` enum,
//! carried in every command's `version` field.

/// `V3_1_8`.
pub const V3_1_8: i32 = 63;
/// `V3_4_9`.
pub const V3_4_9: i32 = 121;
/// `V4_9_4`.
pub const V4_9_4: i32 = 401;
/// `V4_9_8`.
pub const V4_9_8: i32 = 409;
/// `V5_0_0`.
pub const V5_0_0: i32 = 413;
/// `V5_3_3`: what Apache RocketMQ 5.3.3's proxy registers a gRPC client
/// with when its version header names no known release.
pub const V5_3_3: i32 = 479;

/// The version this broker puts in the commands it builds. A 4.9.x value, so
/// clients that gate behaviour on the peer's version treat us as a 4.9 broker.
pub const CURRENT_VERSION: i32 = V4_9_8;

/// Java's first sixteen `MQVersion.Version` names, 3.0.0's pre-releases;
/// from ordinal 16 on every name is a patch release's `_SNAPSHOT` and then
/// the release itself, line by line as [`LINES`] lists them.
const PRE_RELEASES: [&str; 16] = [
    "V3_0_0_SNAPSHOT",
    "V3_0_0_ALPHA1",
    "V3_0_0_BETA1",
    "V3_0_0_BETA2",
    "V3_0_0_BETA3",
    "V3_0_0_BETA4",
    "V3_0_0_BETA5",
    "V3_0_0_BETA6_SNAPSHOT",
    "V3_0_0_BETA6",
    "V3_0_0_BETA7_SNAPSHOT",
    "V3_0_0_BETA7",
    "V3_0_0_BETA8_SNAPSHOT",
    "V3_0_0_BETA8",
    "V3_0_0_BETA9_SNAPSHOT",
    "V3_0_0_BETA9",
    "V3_0_0_FINAL",
];

/// (major, minor, first patch, last patch) of each release line in the
/// enum, in order: 3.0.1 to 3.0.15, 3.1 and 3.2 from patch 0, 3.3 to 3.9
/// from patch 1, then 4.0 to 5.9 from patch 0, each to patch 9.
const LINES: [(u8, u8, u8, u8); 30] = {
    let mut lines = [(0u8, 0u8, 0u8, 9u8); 30];
    lines[0] = (3, 0, 1, 15);
    let mut i = 1;
    while i < 30 {
        let (major, minor) = if i < 10 {
            (3, i as u8)
        } else {
            (4 + ((i - 10) / 10) as u8, ((i - 10) % 10) as u8)
        };
        let first = if major == 3 && minor >= 3 { 1 } else { 0 };
        lines[i] = (major, minor, first, 9);
        i += 1;
    }
    lines
};

/// How many names Java's `MQVersion.Version` has (5.3.3: up to `V5_9_9`).
pub const VERSION_COUNT: i32 = {
    let mut n = PRE_RELEASES.len() as i32;
    let mut i = 0;
    while i < LINES.len() {
        n += 2 * (LINES[i].3 as i32 - LINES[i].2 as i32 + 1);
        i += 1;
    }
    n
};

/// The release at `ordinal` past the pre-releases: (major, minor, patch,
/// snapshot).
fn release_at(mut index: i32) -> Option<(u8, u8, u8, bool)> {
    for (major, minor, first, last) in LINES {
        let names = 2 * (i32::from(last) - i32::from(first) + 1);
        if index < names {
            let patch = i32::from(first) + index / 2;
            return Some((major, minor, u8::try_from(patch).ok()?, index % 2 == 0));
        }
        index -= names;
    }
    None
}

/// Java's `MQVersion.getVersionDesc`: the enum name of a version ordinal
/// (`409` is `"V4_9_8"`); an ordinal past the end names the last version,
/// as Java's does, and a negative one the first.
pub fn version_desc(ordinal: i32) -> String {
    let ordinal = ordinal.clamp(0, VERSION_COUNT - 1);
    if let Some(name) = usize::try_from(ordinal)
        .ok()
        .and_then(|i| PRE_RELEASES.get(i))
    {
        return (*name).to_owned();
    }
    match release_at(ordinal - PRE_RELEASES.len() as i32) {
        Some((major, minor, patch, true)) => format!("V{major}_{minor}_{patch}_SNAPSHOT"),
        Some((major, minor, patch, false)) => format!("V{major}_{minor}_{patch}"),
        None => "V5_9_9".to_owned(),
    }
}

/// The ordinal of a version a client names: an enum name (`"V5_0_7"`,
/// any case) or a dotted release (`"5.0.7"`, `"5.0.8-SNAPSHOT"`; another
/// suffix after `-` or `+`, as in `"5.0.1-rc1"`, is dropped). `None` when
/// it names no version Java's enum has.
pub fn version_ordinal(name: &str) -> Option<i32> {
    let name = name.trim();
    if let Some(i) = PRE_RELEASES
        .iter()
        .position(|p| p.eq_ignore_ascii_case(name))
    {
        return i32::try_from(i).ok();
    }
    let bare = name.strip_prefix(['V', 'v']).unwrap_or(name);
    let (numbers, suffix) = match bare.find(['-', '+']) {
        Some(at) => (&bare[..at], &bare[at + 1..]),
        None => match bare.to_ascii_uppercase().strip_suffix("_SNAPSHOT") {
            Some(_) => (&bare[..bare.len() - "_SNAPSHOT".len()], "SNAPSHOT"),
            None => (bare, ""),
        },
    };
    let snapshot = suffix.eq_ignore_ascii_case("SNAPSHOT");
    let parts: Vec<u8> = numbers
        .split(['.', '_'])
        .map(|p| p.parse::<u8>().ok())
        .collect::<Option<_>>()?;
    let [major, minor, patch] = parts[..] else {
        return None;
    };
    let mut ordinal = PRE_RELEASES.len() as i32;
    for (ma, mi, first, last) in LINES {
        if (ma, mi) == (major, minor) && (first..=last).contains(&patch) {
            return Some(ordinal + 2 * i32::from(patch - first) + i32::from(!snapshot));
        }
        ordinal += 2 * (i32::from(last) - i32::from(first) + 1);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pins the Java ordinals (counted from `MQVersion.Version`).
    #[test]
    fn ordinals_are_pinned() {
        assert_eq!(V3_1_8, 63);
        assert_eq!(V3_4_9, 121);
        assert_eq!(V4_9_4, 401);
        assert_eq!(V4_9_8, 409);
        assert_eq!(V5_0_0, 413);
        assert_eq!(V5_3_3, 479);
    }

    /// Names and ordinals counted from Java's `MQVersion.Version` (5.3.3).
    #[test]
    fn names_follow_javas_enum() {
        let known = [
            (0, "V3_0_0_SNAPSHOT"),
            (15, "V3_0_0_FINAL"),
            (16, "V3_0_1_SNAPSHOT"),
            (17, "V3_0_1"),
            (45, "V3_0_15"),
            (46, "V3_1_0_SNAPSHOT"),
            (V3_1_8, "V3_1_8"),
            (V3_4_9, "V3_4_9"),
            (122, "V3_5_1_SNAPSHOT"),
            (V4_9_4, "V4_9_4"),
            (V4_9_8, "V4_9_8"),
            (V5_0_0, "V5_0_0"),
            (427, "V5_0_7"),
            (V5_3_3, "V5_3_3"),
            (611, "V5_9_9"),
        ];
        for (ordinal, name) in known {
            assert_eq!(version_desc(ordinal), name, "ordinal {ordinal}");
            assert_eq!(version_ordinal(name), Some(ordinal), "{name}");
        }
        assert_eq!(VERSION_COUNT, 612);
        assert_eq!(version_desc(10_000), "V5_9_9", "past the end: the last");
        assert_eq!(version_desc(-1), "V3_0_0_SNAPSHOT");
    }

    #[test]
    fn sdk_version_strings() {
        assert_eq!(version_ordinal("5.0.7"), Some(427));
        assert_eq!(version_ordinal("v5_3_3"), Some(V5_3_3));
        assert_eq!(version_ordinal("5.0.1-rc1"), version_ordinal("V5_0_1"));
        assert_eq!(
            version_ordinal("5.0.8-SNAPSHOT"),
            version_ordinal("V5_0_8_SNAPSHOT")
        );
        assert_eq!(
            version_ordinal("V5_0_8_SNAPSHOT").map(|o| o + 1),
            version_ordinal("5.0.8")
        );
        for bad in [
            "1.0.8", "", "5.0", "5.0.7.1", "3.3.0", "6.0.0", "x.y.z", "5.0.300",
        ] {
            assert_eq!(version_ordinal(bad), None, "{bad:?}");
        }
    }
}
