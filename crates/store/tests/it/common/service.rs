//! The harness service's tables as the backends' own tests check them: written and read back
//! once an older database is brought to the current schema ([`tables_work`]).

use serde_json::json;
use toolsmith_store::{
    Account, AgentRecord, AsyncResult, AsyncSettlement, AsyncStatus, DispatchGroup, EventRecord,
    EventStatus, ServiceStore,
};

/// Writes an account, its agent, an event and a grouped async call, settles the call and
/// purges the event: each reads back as written.
pub async fn tables_work<S: ServiceStore>(store: &S) {
    let account = Account {
        name: "acct".into(),
        secret_hash: [3; 32],
        created_at: 1,
    };
    store.create_account(&account).await.unwrap();
    assert_eq!(store.account("acct").await.unwrap(), Some(account));
    let agent = AgentRecord {
        account: "acct".into(),
        id: "agent".into(),
        config: b"sealed".to_vec(),
        active: true,
        updated_at: 2,
    };
    store.put_agent(&agent).await.unwrap();
    assert_eq!(store.agents("acct").await.unwrap(), [agent]);

    let event = EventRecord {
        account: "acct".into(),
        agent_id: "agent".into(),
        event_id: "ev".into(),
        conversation_key: "conv".into(),
        thread_id: "t".into(),
        status: EventStatus::Processing,
        detail: json!({"text": "ünï"}),
        created_at: 3,
        updated_at: 3,
        expires_at: 10,
    };
    assert!(store.insert_event(&event).await.unwrap());
    assert!(!store.insert_event(&event).await.unwrap());

    let call = AsyncResult {
        result_id: "async_tool_1".into(),
        account: "acct".into(),
        agent_id: "agent".into(),
        parent_event_id: "ev".into(),
        conversation_key: "conv".into(),
        tool_name: "fetch".into(),
        tool_call_id: "c1".into(),
        input: json!({"url": "x"}),
        status: AsyncStatus::Processing,
        response: None,
        error: None,
        external: true,
        created_at: 4,
        updated_at: 4,
        expires_at: 100,
    };
    store.insert_async_result(&call, true).await.unwrap();
    let done = AsyncSettlement::Completed(Some(json!({"ok": true})));
    assert!(
        store
            .settle_async_result("async_tool_1", &done)
            .await
            .unwrap()
    );
    assert!(
        !store
            .settle_async_result("async_tool_1", &done)
            .await
            .unwrap()
    );
    let settled = store.async_result("async_tool_1").await.unwrap().unwrap();
    assert_eq!(settled.status, AsyncStatus::Completed);
    store.seal_group("ev", 100).await.unwrap();
    assert_eq!(
        store.group("ev").await.unwrap(),
        Some(DispatchGroup {
            result_ids: vec!["async_tool_1".into()],
            sealed: true,
        })
    );
    assert_eq!(store.purge_expired(50).await.unwrap(), 1);
    assert_eq!(store.event("acct", "agent", "ev").await.unwrap(), None);
    assert_eq!(store.async_results_of("ev").await.unwrap(), [settled]);
}
