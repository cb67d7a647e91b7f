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

/// The version this broker puts in the commands it builds. A 4.9.x value, so
/// clients that gate behaviour on the peer's version treat us as a 4.9 broker.
pub const CURRENT_VERSION: i32 = V4_9_8;

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
    }
}
