//! `MessageSysFlag` bits of RocketMQ.

/// The body is zlib-compressed by the client.
pub const COMPRESSED: i32 = 0x1;
/// The TAGS property holds several tags.
pub const MULTI_TAGS: i32 = 0x2;
/// Not a transactional message.
pub const TRANSACTION_NOT_TYPE: i32 = 0;
/// A half (prepared) transactional message.
pub const TRANSACTION_PREPARED_TYPE: i32 = 0x4;
/// A committed transactional message.
pub const TRANSACTION_COMMIT_TYPE: i32 = 0x8;
/// A rolled-back transactional message.
pub const TRANSACTION_ROLLBACK_TYPE: i32 = 0xC;
/// Mask of the two transaction bits.
pub const TRANSACTION_MASK: i32 = 0xC;
/// The born host is IPv6 (16-byte address).
pub const BORNHOST_V6: i32 = 0x10;
/// The store host is IPv6 (16-byte address).
pub const STOREHOST_V6: i32 = 0x20;

/// The transaction type bits of `sys_flag`.
pub fn transaction_value(sys_flag: i32) -> i32 {
    sys_flag & TRANSACTION_MASK
}

/// `sys_flag` with its transaction bits replaced by `ty`.
pub fn with_transaction_value(sys_flag: i32, ty: i32) -> i32 {
    (sys_flag & !TRANSACTION_MASK) | (ty & TRANSACTION_MASK)
}

/// Whether the record goes into the consume queue: prepared and rolled-back
/// transactional records never do.
pub fn is_consumable(sys_flag: i32) -> bool {
    matches!(
        transaction_value(sys_flag),
        TRANSACTION_NOT_TYPE | TRANSACTION_COMMIT_TYPE
    )
}

/// Whether the record's keys go into the IndexFile: everything but rollbacks.
pub fn is_indexable(sys_flag: i32) -> bool {
    transaction_value(sys_flag) != TRANSACTION_ROLLBACK_TYPE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transaction_bits() {
        assert_eq!(
            transaction_value(0x10 | 0x4 | 0x1),
            TRANSACTION_PREPARED_TYPE
        );
        assert_eq!(
            with_transaction_value(0x4 | 0x1, TRANSACTION_COMMIT_TYPE),
            0x9
        );
        assert!(is_consumable(0));
        assert!(is_consumable(TRANSACTION_COMMIT_TYPE));
        assert!(!is_consumable(TRANSACTION_PREPARED_TYPE));
        assert!(!is_consumable(TRANSACTION_ROLLBACK_TYPE));
        assert!(is_indexable(TRANSACTION_PREPARED_TYPE));
        assert!(!is_indexable(TRANSACTION_ROLLBACK_TYPE));
    }
}
