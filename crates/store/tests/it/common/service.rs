//! The harness service's tables as the backends' own tests check them: written and read back
//! once an older database is brought to the current schema ([`tables_work`]), and raced over
//! by two stores sharing a database ([`two_stores_race`]).

use std::sync::Arc;

use serde_json::json;
use toolsmith_store::{
    Account, AgentRecord, AsyncResult, AsyncSettlement, AsyncStatus, DispatchGroup, EventRecord,
    EventStatus, ServiceStore,
};

/// Writes an account, its agent, two events (one processing) and a grouped async call, lists
/// the thread's processing events, settles the call and purges the events: each reads back as
/// written.
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
    let settled_event = EventRecord {
        event_id: "ev-settled".into(),
        status: EventStatus::Completed,
        ..event.clone()
    };
    assert!(store.insert_event(&settled_event).await.unwrap());
    assert_eq!(
        store.processing_events("t").await.unwrap(),
        std::slice::from_ref(&event)
    );

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
    assert_eq!(store.purge_expired(50).await.unwrap(), 2);
    assert_eq!(store.processing_events("t").await.unwrap(), []);
    assert_eq!(store.event("acct", "agent", "ev").await.unwrap(), None);
    assert_eq!(store.async_results_of("ev").await.unwrap(), [settled]);
}

/// Two stores on one database, as two processes: of racing inserts of one event and racing
/// settlements of one call, spread over both, exactly one succeeds; racing inserts into one
/// dispatch group (`parent-race`) all land in it.
pub async fn two_stores_race<S: ServiceStore>(first: Arc<S>, second: Arc<S>) {
    let stores = [first, second];
    let call = |id: String| AsyncResult {
        result_id: id,
        account: "acct".into(),
        agent_id: "agent".into(),
        parent_event_id: "parent-race".into(),
        conversation_key: "conv".into(),
        tool_name: "fetch".into(),
        tool_call_id: "c1".into(),
        input: json!({}),
        status: AsyncStatus::Processing,
        response: None,
        error: None,
        external: false,
        created_at: 1,
        updated_at: 1,
        expires_at: u64::MAX,
    };
    stores[0]
        .insert_async_result(&call("async_tool_settle".into()), false)
        .await
        .unwrap();
    let settlements: Vec<_> = (0..16)
        .map(|i| {
            let store = stores[i % 2].clone();
            let failed = AsyncSettlement::Failed(format!("racer {i}"));
            tokio::spawn(async move {
                store
                    .settle_async_result("async_tool_settle", &failed)
                    .await
            })
        })
        .collect();
    let mut settled = 0;
    for settlement in settlements {
        settled += usize::from(settlement.await.unwrap().unwrap());
    }
    assert_eq!(settled, 1, "of settlements racing over two stores one wins");

    let inserts: Vec<_> = (0..16)
        .map(|i| {
            let store = stores[i % 2].clone();
            let event = EventRecord {
                account: "acct".into(),
                agent_id: "agent".into(),
                event_id: "ev-race".into(),
                conversation_key: "conv".into(),
                thread_id: format!("t{i}"),
                status: EventStatus::Processing,
                detail: json!(i),
                created_at: 1,
                updated_at: 1,
                expires_at: u64::MAX,
            };
            tokio::spawn(async move { store.insert_event(&event).await })
        })
        .collect();
    let mut inserted = 0;
    for insert in inserts {
        inserted += usize::from(insert.await.unwrap().unwrap());
    }
    assert_eq!(
        inserted, 1,
        "of inserts of one event racing over two stores one wins"
    );

    let members: Vec<_> = (0..16)
        .map(|i| {
            let store = stores[i % 2].clone();
            let row = call(format!("async_tool_member_{i:02}"));
            tokio::spawn(async move { store.insert_async_result(&row, true).await })
        })
        .collect();
    for member in members {
        member.await.unwrap().unwrap();
    }
    let mut ids = stores[1]
        .group("parent-race")
        .await
        .unwrap()
        .unwrap()
        .result_ids;
    ids.sort();
    let expected: Vec<String> = (0..16)
        .map(|i| format!("async_tool_member_{i:02}"))
        .collect();
    assert_eq!(ids, expected, "every racing insert joins the group once");
}
