//! The journal entry the migration tests carry across an upgrade: an intended payment.

use serde_json::json;
use toolsmith_store::{EffectStatus, JournalEntry};

/// Call `c1` of run `r` in thread `t`: `pay` to bob, side-effecting and not idempotent,
/// intended and not settled.
pub fn intended_payment() -> JournalEntry {
    JournalEntry {
        thread_id: "t".into(),
        run_id: "r".into(),
        tool_call_id: "c1".into(),
        tool_name: "pay".into(),
        seq: 0,
        attempt: 1,
        input: json!({"to": "bob"}),
        side_effect: true,
        idempotent: false,
        idempotency_key: Some("r:c1".into()),
        accepts_idempotency_key: false,
        has_revert: false,
        status: EffectStatus::Intended,
        output: None,
    }
}
