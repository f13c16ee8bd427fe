//! Approval: the agent's policy, the key that binds an approval to its call, the timeout, and
//! the handler that decides in callback mode ([`handler`]).

mod handler;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;
use toolsmith_core::{SharedTool, ToolContext};

/// Which tools need approval, agent-wide (RadarOS's `approval.policy`).
///
/// A tool's own setting ([`toolsmith_core::Approval`]: always, or a predicate over the arguments)
/// adds to this, and can never be lowered by it: a tool that requires approval is never run
/// unapproved, whatever the agent says (RadarOS ran it anyway when the agent had no approval
/// config; that is a bug we do not copy).
///
/// ```
/// use toolsmith_agent::ApprovalPolicy;
///
/// assert!(ApprovalPolicy::Tools(vec!["transfer".into()]).names("transfer"));
/// assert!(!ApprovalPolicy::None.names("transfer"));
/// assert!(ApprovalPolicy::All.names("anything"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ApprovalPolicy {
    /// Only the tools that ask for approval themselves. The default.
    #[default]
    None,
    /// Every tool.
    All,
    /// These tools, by name, and those that ask themselves.
    Tools(Vec<String>),
}

impl ApprovalPolicy {
    /// Whether the policy requires approval for the tool `name`.
    pub fn names(&self, name: &str) -> bool {
        match self {
            ApprovalPolicy::None => false,
            ApprovalPolicy::All => true,
            ApprovalPolicy::Tools(names) => names.iter().any(|n| n == name),
        }
    }
}

/// What happens to an approval nobody answered in time (RadarOS's `timeoutAction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimeoutAction {
    /// The call is denied with the reason `Approval timed out`. The default.
    #[default]
    Deny,
    /// The call runs; its approval's reason is `Auto-approved on timeout`.
    Approve,
    /// The call fails with `Approval timed out (configured to throw)`.
    Error,
}

/// The reason a timed-out approval is denied with (RadarOS's text).
pub const TIMED_OUT: &str = "Approval timed out";
/// The reason a timed-out approval is approved with (RadarOS's text).
pub const AUTO_APPROVED: &str = "Auto-approved on timeout";
/// The error a timed-out approval fails with under [`TimeoutAction::Error`] (RadarOS's text).
pub const TIMED_OUT_ERROR: &str = "Approval timed out (configured to throw)";
pub use toolsmith_core::DENIED_BY_REVIEWER;

pub use handler::{
    APPROVAL_DENIED, ApprovalDecision, ApprovalHandler, ApprovalRequest, HANDLER_FAILED,
};
pub(crate) use handler::{Verdict, ask};

/// The secret that makes approval ids unforgeable.
///
/// An approval id is an HMAC-SHA256, under this key, of the call's id, tool name and input: a
/// client cannot make up the id of a call it was not asked about, nor reuse an answer for a
/// call with other arguments, and an answer to a call that already has its result matches no
/// pending approval. Runs that resume a thread paused by another process (or machine) need the
/// same key: [`ApprovalKey::new`] with a stored secret. The default, [`ApprovalKey::random`], is
/// fresh per agent.
#[derive(Clone)]
pub struct ApprovalKey(Arc<[u8]>);

impl ApprovalKey {
    /// A key from secret bytes (at least 16 of them; 32 random bytes is the norm).
    ///
    /// # Panics
    ///
    /// When `secret` is shorter than 16 bytes: such a key could be guessed.
    pub fn new(secret: impl AsRef<[u8]>) -> Self {
        let secret = secret.as_ref();
        assert!(
            secret.len() >= 16,
            "an approval key needs at least 16 bytes, got {}",
            secret.len()
        );
        ApprovalKey(secret.into())
    }

    /// A fresh random key (256 bits from the operating system's generator).
    pub fn random() -> Self {
        // Two v4 UUIDs are 244 random bits from the OS generator (uuid uses getrandom).
        let mut bytes = uuid::Uuid::new_v4().as_bytes().to_vec();
        bytes.extend(uuid::Uuid::new_v4().as_bytes());
        ApprovalKey(bytes.into())
    }

    /// The approval id of a call: `apr_` and 32 hex digits of the HMAC.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolsmith_agent::ApprovalKey;
    ///
    /// let key = ApprovalKey::new([7u8; 32]);
    /// let id = key.approval_id("call_1", "transfer", &json!({"amount": 5}));
    /// assert!(id.starts_with("apr_") && id.len() == 36);
    /// assert_ne!(id, key.approval_id("call_1", "transfer", &json!({"amount": 500})));
    /// assert_ne!(id, ApprovalKey::new([8u8; 32]).approval_id("call_1", "transfer", &json!({"amount": 5})));
    /// ```
    pub fn approval_id(&self, tool_call_id: &str, tool_name: &str, input: &Value) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key length");
        // Length-prefixed fields: no two different calls feed the same bytes.
        for field in [
            tool_call_id.as_bytes(),
            tool_name.as_bytes(),
            input.to_string().as_bytes(),
        ] {
            mac.update(&(field.len() as u64).to_le_bytes());
            mac.update(field);
        }
        let digest = mac.finalize().into_bytes();
        let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        format!("apr_{hex}")
    }
}

impl fmt::Debug for ApprovalKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApprovalKey([secret])")
    }
}

/// An agent's approval settings.
#[derive(Clone)]
pub(crate) struct ApprovalSettings {
    pub(crate) policy: ApprovalPolicy,
    pub(crate) timeout: Duration,
    pub(crate) timeout_action: TimeoutAction,
    pub(crate) key: ApprovalKey,
    /// Callback mode: decides calls while the run waits. `None`: event mode, the run pauses.
    pub(crate) handler: Option<Arc<dyn ApprovalHandler>>,
}

impl Default for ApprovalSettings {
    fn default() -> Self {
        ApprovalSettings {
            policy: ApprovalPolicy::None,
            timeout: Duration::from_secs(300),
            timeout_action: TimeoutAction::Deny,
            key: ApprovalKey::random(),
            handler: None,
        }
    }
}

impl ApprovalSettings {
    /// Whether this call needs approval: the tool's own setting (its predicate failing counts as
    /// asking), else whether the policy names it.
    pub(crate) fn required(&self, tool: &SharedTool, input: &Value, cx: &ToolContext) -> bool {
        tool.meta()
            .approval
            .decide(input, cx)
            .unwrap_or_else(|| self.policy.names(tool.spec().name()))
    }
}

/// Milliseconds since the Unix epoch, now.
pub(crate) fn now_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn radaros_defaults_no_policy_five_minutes_then_deny() {
        let settings = ApprovalSettings::default();
        assert_eq!(settings.policy, ApprovalPolicy::None);
        assert_eq!(settings.timeout, Duration::from_secs(300));
        assert_eq!(settings.timeout_action, TimeoutAction::Deny);
        assert!(
            settings.handler.is_none(),
            "event mode unless a handler is set"
        );
    }
}
