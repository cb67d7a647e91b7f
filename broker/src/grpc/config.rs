//! Settings of the gRPC API that Apache RocketMQ keeps in its proxy's
//! `proxy.json` (`ProxyConfig`), under the same keys and defaults, so a
//! proxy's settings carry over to the broker's config.

use serde::{Deserialize, Serialize};

/// The proxy's settings the broker's gRPC API follows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GrpcConfig {
    /// Renew the receipt handles of messages received with `auto_renew`
    /// (the push consumers of the 5.x SDKs) until they are acked.
    pub enable_proxy_auto_renew: bool,
    /// Invisible time of a message received with `auto_renew`, ms (the
    /// proxy's key, with its spelling).
    #[serde(rename = "defaultInvisibleTimeMills")]
    pub default_invisible_time_ms: i64,
    /// A handle is renewed once it would turn visible within this, ms.
    #[serde(rename = "renewAheadTimeMillis")]
    pub renew_ahead_time_ms: i64,
    /// How often handles are looked at for renewal, ms.
    #[serde(rename = "renewSchedulePeriodMillis")]
    pub renew_schedule_period_ms: u64,
    /// Past this since it was received, a message is no longer renewed: it
    /// is made visible after its group's next retry delay, ms.
    #[serde(rename = "renewMaxTimeMillis")]
    pub renew_max_time_ms: i64,
    /// Failed renewals of one handle before it is given up.
    pub max_renew_retry_times: u32,
    /// Invisible time given to a handle whose client went away, ms.
    #[serde(rename = "invisibleTimeMillisWhenClear")]
    pub invisible_time_when_clear_ms: i64,
}

impl Default for GrpcConfig {
    fn default() -> Self {
        Self {
            enable_proxy_auto_renew: true,
            default_invisible_time_ms: 60_000,
            renew_ahead_time_ms: 10_000,
            renew_schedule_period_ms: 5_000,
            renew_max_time_ms: 3 * 3_600_000,
            max_renew_retry_times: 3,
            invisible_time_when_clear_ms: 1_000,
        }
    }
}

impl GrpcConfig {
    /// Checks the values; the error names the key.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let positive = [
            ("defaultInvisibleTimeMills", self.default_invisible_time_ms),
            ("renewAheadTimeMillis", self.renew_ahead_time_ms),
            ("renewMaxTimeMillis", self.renew_max_time_ms),
            (
                "invisibleTimeMillisWhenClear",
                self.invisible_time_when_clear_ms,
            ),
        ];
        for (key, v) in positive {
            if v <= 0 {
                return Err((key, format!("{v} is not a positive number of ms")));
            }
        }
        if self.renew_schedule_period_ms == 0 {
            return Err((
                "renewSchedulePeriodMillis",
                "0 is not a positive number of ms".into(),
            ));
        }
        Ok(())
    }
}
