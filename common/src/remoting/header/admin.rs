//! Header of RESUME_CHECK_HALF_MESSAGE (323).

use super::ext_header;

ext_header! {
    /// `ResumeCheckHalfMessageRequestHeader`.
    pub struct ResumeCheckHalfRequestHeader {
        /// `msgId`: the half message's offset message id.
        pub msg_id: String = string("msgId"),
    }
}
