//! The harness service's async results and dispatch groups: recorded once, settled once,
//! listed in order, grouped in the order added, and purged when they expire.

use std::sync::Arc;

use serde_json::json;

use super::service::{FAR, account, agent, call, event, group_of, ids};
use crate::store::now_millis;
use crate::{
    AsyncResult, AsyncSettlement, AsyncStatus, DispatchGroup, EventRecord, ServiceStore, StoreError,
};

pub(super) async fn async_results<S: ServiceStore>(store: &S) {
    let row = AsyncResult {
        external: true,
        ..call("async_tool_basic", "parent-basic")
    };
    store.insert_async_result(&row, false).await.unwrap();
    assert_eq!(
        store
            .async_result("async_tool_basic")
            .await
            .unwrap()
            .as_ref(),
        Some(&row),
        "a call's row reads back exactly"
    );
    assert_eq!(
        store.async_result("async_tool_missing").await.unwrap(),
        None
    );
    assert_eq!(
        group_of(store, "parent-basic").await,
        None,
        "a call recorded without its group makes none"
    );

    let taken = AsyncResult {
        account: "acct-else".into(),
        input: json!("else"),
        external: false,
        ..row.clone()
    };
    for group in [false, true] {
        assert!(
            matches!(
                store.insert_async_result(&taken, group).await,
                Err(StoreError::Exists(id)) if id == "async_tool_basic"
            ),
            "a taken result id is Exists naming it"
        );
    }
    assert_eq!(
        store.async_result("async_tool_basic").await.unwrap(),
        Some(row),
        "a refused row leaves the first as it was"
    );
    assert_eq!(
        group_of(store, "parent-basic").await,
        None,
        "a refused row adds nothing to a group"
    );

    let failed = AsyncResult {
        status: AsyncStatus::Failed,
        error: Some("boom: ✗".into()),
        ..call("async_tool_failed", "parent-basic")
    };
    store.insert_async_result(&failed, false).await.unwrap();
    assert_eq!(
        store.async_result("async_tool_failed").await.unwrap(),
        Some(failed),
        "a row's status and error read back"
    );
}

pub(super) async fn settlements<S: ServiceStore>(store: &S) {
    let read = |id| async move { store.async_result(id).await.unwrap().unwrap() };
    let settle =
        |id, settlement| async move { store.settle_async_result(id, &settlement).await.unwrap() };

    let a = AsyncResult {
        error: Some("stale".into()),
        ..call("async_tool_settle_a", "parent-settle")
    };
    store.insert_async_result(&a, false).await.unwrap();
    let response = json!({"ok": 1, "items": ["ä", {"b": null}]});
    let before = now_millis();
    assert!(
        settle(
            "async_tool_settle_a",
            AsyncSettlement::Completed(Some(response.clone()))
        )
        .await,
        "a processing row is settled"
    );
    let settled = read("async_tool_settle_a").await;
    assert!(
        settled.updated_at >= before,
        "a settlement sets updated_at to now"
    );
    assert_eq!(
        settled,
        AsyncResult {
            status: AsyncStatus::Completed,
            response: Some(response),
            error: None,
            updated_at: settled.updated_at,
            ..a
        },
        "a completion sets the response, clears the error and keeps the rest"
    );
    for late in [
        AsyncSettlement::Failed("late".into()),
        AsyncSettlement::Completed(Some(json!("late"))),
    ] {
        assert!(
            !settle("async_tool_settle_a", late).await,
            "a settled row is not settled again"
        );
    }
    assert_eq!(
        read("async_tool_settle_a").await,
        settled,
        "a refused settlement changes nothing"
    );
    assert!(
        !settle("async_tool_missing", AsyncSettlement::Completed(None)).await,
        "a missing row is not settled"
    );

    let b = AsyncResult {
        response: Some(json!("stale")),
        ..call("async_tool_settle_b", "parent-settle")
    };
    store.insert_async_result(&b, false).await.unwrap();
    assert!(
        settle(
            "async_tool_settle_b",
            AsyncSettlement::Failed("boom".into())
        )
        .await
    );
    let failed = read("async_tool_settle_b").await;
    assert_eq!(
        (failed.status, failed.response, failed.error.as_deref()),
        (AsyncStatus::Failed, None, Some("boom")),
        "a failure sets the error and clears the response"
    );

    let done = AsyncResult {
        status: AsyncStatus::Completed,
        response: Some(json!(1)),
        ..call("async_tool_settle_done", "parent-settle")
    };
    store.insert_async_result(&done, false).await.unwrap();
    assert!(
        !settle(
            "async_tool_settle_done",
            AsyncSettlement::Failed("x".into())
        )
        .await,
        "only a processing row is settled"
    );
    assert_eq!(read("async_tool_settle_done").await, done);
}

pub(super) async fn async_results_in_order<S: ServiceStore>(store: &S) {
    let rows = [
        ("async_tool_c", 30),
        ("async_tool_a", 10),
        ("async_tool_y", 20),
        ("async_tool_b", 20),
        ("async_tool_Z", 20),
    ];
    for (id, created_at) in rows {
        let row = AsyncResult {
            created_at,
            ..call(id, "parent-order")
        };
        store.insert_async_result(&row, false).await.unwrap();
    }
    store
        .insert_async_result(&call("async_tool_elsewhere", "parent-order-2"), false)
        .await
        .unwrap();
    let settled = AsyncSettlement::Failed("x".into());
    store
        .settle_async_result("async_tool_y", &settled)
        .await
        .unwrap();
    let of = store.async_results_of("parent-order").await.unwrap();
    assert_eq!(
        ids(&of),
        [
            "async_tool_a",
            "async_tool_Z",
            "async_tool_b",
            "async_tool_y",
            "async_tool_c"
        ],
        "a parent's calls of any status, oldest first, then by id (in byte order)"
    );
    assert_eq!(of[3].status, AsyncStatus::Failed);
    assert_eq!(
        store.async_results_of("parent-none").await.unwrap(),
        [],
        "a parent without calls has none"
    );
}

pub(super) async fn groups<S: ServiceStore>(store: &S) {
    assert_eq!(group_of(store, "parent-g").await, None, "no group at first");
    for id in ["async_tool_g3", "async_tool_g1", "async_tool_g2"] {
        store
            .insert_async_result(&call(id, "parent-g"), true)
            .await
            .unwrap();
    }
    let added = ["async_tool_g3", "async_tool_g1", "async_tool_g2"].map(String::from);
    assert_eq!(
        group_of(store, "parent-g").await,
        Some(DispatchGroup {
            result_ids: added.to_vec(),
            sealed: false,
        }),
        "a group made by its calls is unsealed, its ids in the order they were added"
    );
    for _ in 0..2 {
        store.seal_group("parent-g", FAR).await.unwrap();
        assert_eq!(
            group_of(store, "parent-g").await,
            Some(DispatchGroup {
                result_ids: added.to_vec(),
                sealed: true,
            }),
            "sealing (again) keeps the ids"
        );
    }
    store
        .insert_async_result(&call("async_tool_g0", "parent-g"), true)
        .await
        .unwrap();
    let group = group_of(store, "parent-g").await.unwrap();
    assert!(group.sealed, "a sealed group stays sealed");
    assert_eq!(
        group.result_ids,
        [&added[..], &["async_tool_g0".to_string()]].concat(),
        "a sealed group keeps its ids (and the store does not refuse a late one)"
    );

    store.seal_group("parent-g-empty", FAR).await.unwrap();
    assert_eq!(
        group_of(store, "parent-g-empty").await,
        Some(DispatchGroup {
            result_ids: Vec::new(),
            sealed: true,
        }),
        "sealing a missing group makes it, empty"
    );
    store
        .insert_async_result(&call("async_tool_h1", "parent-h"), true)
        .await
        .unwrap();
    assert_eq!(
        group_of(store, "parent-h").await.unwrap().result_ids,
        ["async_tool_h1"],
        "each parent has its own group"
    );
    assert_eq!(
        group_of(store, "parent-g").await.unwrap().result_ids.len(),
        4
    );
}

/// Of racing settlements of one row exactly one settles it, and its outcome is the one kept.
pub(super) async fn concurrent_settlements<S: ServiceStore>(store: Arc<S>) {
    store
        .insert_async_result(&call("async_tool_race", "parent-race-settle"), false)
        .await
        .unwrap();
    let outcome = |i: i32| {
        if i % 2 == 0 {
            AsyncSettlement::Completed(Some(json!({"racer": i})))
        } else {
            AsyncSettlement::Failed(format!("racer {i}"))
        }
    };
    let racers: Vec<_> = (0..8)
        .map(|i| {
            let store = store.clone();
            let settlement = outcome(i);
            tokio::spawn(async move {
                let settled = store.settle_async_result("async_tool_race", &settlement);
                (i, settled.await)
            })
        })
        .collect();
    let mut winners = Vec::new();
    for racer in racers {
        let (i, settled) = racer.await.unwrap();
        if settled.unwrap() {
            winners.push(i);
        }
    }
    assert_eq!(winners.len(), 1, "of racing settlements one wins");
    let row = store
        .async_result("async_tool_race")
        .await
        .unwrap()
        .unwrap();
    let kept = match (row.status, row.response, row.error) {
        (AsyncStatus::Completed, response, None) => AsyncSettlement::Completed(response),
        (AsyncStatus::Failed, None, Some(error)) => AsyncSettlement::Failed(error),
        other => panic!("a settled row is completed or failed, not {other:?}"),
    };
    assert_eq!(
        kept,
        outcome(winners[0]),
        "the winner's outcome is the one kept"
    );
}

/// Racing inserts into one group all land in it, once each; of racing inserts of one id
/// exactly one does, and the losers add nothing to its group.
pub(super) async fn concurrent_group_inserts<S: ServiceStore>(store: Arc<S>) {
    let members: Vec<_> = (0..8)
        .map(|i| {
            let store = store.clone();
            let row = call(&format!("async_tool_member_{i}"), "parent-race");
            tokio::spawn(async move { store.insert_async_result(&row, true).await })
        })
        .collect();
    for member in members {
        member.await.unwrap().unwrap();
    }
    let mut added = group_of(&*store, "parent-race").await.unwrap().result_ids;
    added.sort();
    let expected: Vec<String> = (0..8).map(|i| format!("async_tool_member_{i}")).collect();
    assert_eq!(added, expected, "every racing insert joins the group, once");

    let same: Vec<_> = (0..8)
        .map(|i| {
            let store = store.clone();
            let row = AsyncResult {
                input: json!({"racer": i}),
                ..call("async_tool_same", "parent-race-same")
            };
            tokio::spawn(async move { store.insert_async_result(&row, true).await })
        })
        .collect();
    let mut inserted = 0;
    for insert in same {
        match insert.await.unwrap() {
            Ok(()) => inserted += 1,
            Err(StoreError::Exists(id)) => assert_eq!(id, "async_tool_same"),
            Err(e) => panic!("a losing insert of a taken id gets Exists, not {e}"),
        }
    }
    assert_eq!(inserted, 1, "of racing inserts of one id one wins");
    assert_eq!(
        group_of(&*store, "parent-race-same")
            .await
            .unwrap()
            .result_ids,
        ["async_tool_same"],
        "the losers add nothing to the group"
    );
}

/// `purge_expired` removes the events, calls and groups that expire before `now` (not at it),
/// counts them, and leaves everything else. Run last: its final step purges every row that
/// expires.
pub(super) async fn purge<S: ServiceStore>(store: &S) {
    store
        .create_account(&account("acct-purge", 4))
        .await
        .unwrap();
    let kept_agent = agent("acct-purge", "agent-1", b"kept", true);
    store.put_agent(&kept_agent).await.unwrap();
    let expiring = |id: &str, expires_at| EventRecord {
        expires_at,
        ..event("acct-purge", "agent-1", id)
    };
    store
        .insert_event(&expiring("ev-old", 1_000))
        .await
        .unwrap();
    store
        .insert_event(&expiring("ev-edge", 2_000))
        .await
        .unwrap();
    let insert = |id: &str, parent: &str, expires_at, group| {
        let row = AsyncResult {
            expires_at,
            ..call(id, parent)
        };
        async move { store.insert_async_result(&row, group).await.unwrap() }
    };
    // A group expires with the last call added to it, or as its seal says.
    insert("async_tool_old", "parent-purge-old", 1_000, true).await;
    insert("async_tool_b1", "parent-purge-kept", 1_000, true).await;
    insert("async_tool_b2", "parent-purge-kept", 3_000, true).await;
    insert("async_tool_c1", "parent-purge-sealed", 3_000, true).await;
    store
        .seal_group("parent-purge-sealed", 1_500)
        .await
        .unwrap();
    insert("async_tool_d", "parent-purge-lone", 1_999, false).await;

    assert_eq!(
        store.purge_expired(2_000).await.unwrap(),
        6,
        "a purge counts the events, calls and groups it removed (1 + 3 + 2)"
    );
    let event = |id| async move { store.event("acct-purge", "agent-1", id).await.unwrap() };
    assert_eq!(event("ev-old").await, None, "an expired event is purged");
    assert!(
        event("ev-edge").await.is_some(),
        "a row expiring at `now` is kept"
    );
    for (id, kept) in [
        ("async_tool_old", false),
        ("async_tool_b1", false),
        ("async_tool_d", false),
        ("async_tool_b2", true),
        ("async_tool_c1", true),
    ] {
        assert_eq!(
            store.async_result(id).await.unwrap().is_some(),
            kept,
            "{id}: expired calls are purged, the others kept"
        );
    }
    assert_eq!(group_of(store, "parent-purge-old").await, None);
    assert_eq!(
        group_of(store, "parent-purge-sealed").await,
        None,
        "a group expires as its seal says"
    );
    assert_eq!(
        group_of(store, "parent-purge-kept").await,
        Some(DispatchGroup {
            result_ids: vec!["async_tool_b1".into(), "async_tool_b2".into()],
            sealed: false,
        }),
        "a group expires with its last call, and keeps the ids of purged ones"
    );
    assert!(group_of(store, "parent-g").await.is_some());
    assert_eq!(
        store.purge_expired(2_000).await.unwrap(),
        0,
        "a second purge finds nothing"
    );

    // A purged group's ids and seal went with it.
    insert("async_tool_old_2", "parent-purge-old", FAR, true).await;
    insert("async_tool_c2", "parent-purge-sealed", FAR, true).await;
    for (parent, id) in [
        ("parent-purge-old", "async_tool_old_2"),
        ("parent-purge-sealed", "async_tool_c2"),
    ] {
        assert_eq!(
            group_of(store, parent).await,
            Some(DispatchGroup {
                result_ids: vec![id.into()],
                sealed: false,
            }),
            "a group made again after its purge starts empty and unsealed"
        );
    }

    // A row that never expires outlasts a purge of everything else; accounts and agents do
    // not expire.
    store
        .insert_event(&expiring("ev-forever", u64::MAX))
        .await
        .unwrap();
    assert!(store.purge_expired(u64::MAX).await.unwrap() > 0);
    assert!(
        event("ev-forever").await.is_some(),
        "a row expiring at u64::MAX is never purged"
    );
    assert_eq!(event("ev-edge").await, None);
    assert_eq!(group_of(store, "parent-g").await, None);
    assert_eq!(store.purge_expired(u64::MAX).await.unwrap(), 0);
    assert!(store.account("acct-purge").await.unwrap().is_some());
    assert_eq!(
        store.agent("acct-purge", "agent-1").await.unwrap(),
        Some(kept_agent),
        "a purge leaves accounts and agents"
    );
}
