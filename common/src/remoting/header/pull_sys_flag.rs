//! `PullSysFlag` bits of a pull request's `sysFlag`.

/// The request carries `commitOffset` for the broker to store.
pub const COMMIT_OFFSET: i32 = 0x1;
/// Long polling: hold the request while the queue has nothing new.
pub const SUSPEND: i32 = 0x1 << 1;
/// The request carries its subscription expression.
pub const SUBSCRIPTION: i32 = 0x1 << 2;
/// Class filter mode (obsolete filter servers).
pub const CLASS_FILTER: i32 = 0x1 << 3;
/// Sent by a lite pull consumer.
pub const LITE_PULL: i32 = 0x1 << 4;

/// Whether `COMMIT_OFFSET` is set.
pub fn has_commit_offset(sys_flag: i32) -> bool {
    sys_flag & COMMIT_OFFSET != 0
}

/// Whether `SUSPEND` is set.
pub fn has_suspend(sys_flag: i32) -> bool {
    sys_flag & SUSPEND != 0
}

/// Whether `SUBSCRIPTION` is set.
pub fn has_subscription(sys_flag: i32) -> bool {
    sys_flag & SUBSCRIPTION != 0
}

/// Whether `CLASS_FILTER` is set.
pub fn has_class_filter(sys_flag: i32) -> bool {
    sys_flag & CLASS_FILTER != 0
}

/// Whether `LITE_PULL` is set.
pub fn has_lite_pull(sys_flag: i32) -> bool {
    sys_flag & LITE_PULL != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pins the Java values.
    #[test]
    fn java_values_are_pinned() {
        assert_eq!(COMMIT_OFFSET, 1);
        assert_eq!(SUSPEND, 2);
        assert_eq!(SUBSCRIPTION, 4);
        assert_eq!(CLASS_FILTER, 8);
        assert_eq!(LITE_PULL, 16);
        let flag = COMMIT_OFFSET | SUBSCRIPTION;
        assert!(has_commit_offset(flag) && has_subscription(flag));
        assert!(!has_suspend(flag) && !has_class_filter(flag) && !has_lite_pull(flag));
    }
}
