//! The message model and its byte codecs.

pub mod batch;
pub mod lmq;
pub mod msg_id;
pub mod properties;
pub mod record;
pub mod sysflag;
pub mod tags;

pub use msg_id::{decode_offset_msg_id, encode_offset_msg_id, MsgIdError};
pub use properties::{Properties, PropertiesError};
pub use record::{
    encode_record, MessageToStore, RecordError, RecordHeader, RecordView, BLANK_MAGIC_CODE,
    END_FILE_MIN_BLANK_LENGTH, MESSAGE_MAGIC_CODE,
};
pub use tags::{java_string_hash, tags_code};
