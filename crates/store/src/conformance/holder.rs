//! The holder of a running thread: recorded by its claim, kept while it runs, cleared when it
//! stops or is handed back.

use toolsmith_core::Message;

use super::write;
use crate::{Batch, Holder, NewThread, Store, StoreError, ThreadStatus, ThreadWrite};

pub(super) async fn holders<S: Store>(store: &S) {
    let created = store.create_thread(NewThread::new("t-held")).await.unwrap();
    assert_eq!(created.holder, None, "a new thread has no holder");
    let first = Holder {
        host: "host-a/boot/pid:[1]".into(),
        pid: 4242,
        started: 987_654_321_012,
    };
    let v1 = store.claim("t-held", 0, "run-a", &first).await.unwrap();
    let holder = || async { store.thread("t-held").await.unwrap().unwrap().holder };
    assert_eq!(
        holder().await.as_ref(),
        Some(&first),
        "a claim records its holder exactly"
    );

    let step = [Message::user("go")];
    let running = ThreadWrite::new("t-held", v1, 0, &step, ThreadStatus::Running);
    let v2 = write(store, running).await.unwrap();
    store.touch("t-held", v2).await.unwrap();
    assert_eq!(
        holder().await.as_ref(),
        Some(&first),
        "writes of the running thread and touches keep its holder"
    );

    let second = Holder {
        pid: 7,
        started: 1,
        ..first
    };
    let v3 = store.claim("t-held", v2, "run-a", &second).await.unwrap();
    assert_eq!(holder().await, Some(second), "a claim replaces the holder");
    let paused = ThreadWrite::new("t-held", v3, 1, &[], ThreadStatus::Paused);
    write(store, paused).await.unwrap();
    assert_eq!(
        holder().await,
        None,
        "a thread that stops running has no holder"
    );
}

/// A run handed back: its save and the release in one batch leave the thread running, held by
/// no one, so that any process may take it over at once; a release of a thread that does not
/// exist fails the whole batch.
pub(super) async fn releases<S: Store>(store: &S) {
    let lease = std::time::Duration::from_secs(60);
    store.create_thread(NewThread::new("t-rel")).await.unwrap();
    // Another host's process: never known to be gone, so only the release frees the thread.
    let elsewhere = Holder {
        host: "another-host/boot/pid:[1]".into(),
        pid: 1,
        started: 1,
    };
    let v1 = store.claim("t-rel", 0, "run-r", &elsewhere).await.unwrap();
    let thread = || async { store.thread("t-rel").await.unwrap().unwrap() };
    assert!(
        thread().await.held_within(lease).is_some(),
        "a claimed thread is held"
    );

    let step = [Message::user("go")];
    let save = ThreadWrite::new("t-rel", v1, 0, &step, ThreadStatus::Running);
    let committed = store
        .commit(Batch::new().write(save).release("t-rel"))
        .await
        .unwrap();
    assert_eq!(committed.version, Some(v1 + 1));
    let released = thread().await;
    assert_eq!(
        released.status,
        ThreadStatus::Running,
        "a released run still runs"
    );
    assert_eq!(released.holder, None, "a released thread has no holder");
    assert_eq!(released.message_count, 1);
    assert_eq!(
        released.held_within(lease),
        None,
        "a released thread is free at once"
    );
    store.touch("t-rel", v1 + 1).await.unwrap();
    assert_eq!(
        thread().await.held_within(lease),
        None,
        "a late heartbeat of the run that let go does not hold it again"
    );

    let v3 = store
        .claim("t-rel", v1 + 1, "run-r", &elsewhere)
        .await
        .unwrap();
    assert!(thread().await.held_within(lease).is_some(), "claimed again");
    let more = [Message::assistant("on")];
    let save = ThreadWrite::new("t-rel", v3, 1, &more, ThreadStatus::Running);
    let failed = store
        .commit(Batch::new().write(save).release("t-rel-missing"))
        .await;
    assert!(matches!(failed, Err(StoreError::NotFound(_))), "{failed:?}");
    let kept = thread().await;
    assert_eq!(
        (kept.version, kept.message_count, kept.holder),
        (v3, 1, Some(elsewhere)),
        "nothing of a failed batch stays"
    );
}

/// A run started on a new thread ([`Store::start_thread`]): the thread as a create, a write of
/// the prompt and a claim leave it, in one call; an id that is taken is refused, untouched.
pub(super) async fn starts<S: Store>(store: &S) {
    let holder = Holder {
        host: "host-s/boot/pid:[1]".into(),
        pid: 77,
        started: 12_345,
    };
    let prompt = [Message::user("hello"), Message::user("again")];
    let new = NewThread::new("t-started").with_tag("kind:test");
    let version = store
        .start_thread(new, &prompt, "run-s", &holder)
        .await
        .unwrap();
    assert_eq!(version, 2);
    let thread = store.thread("t-started").await.unwrap().unwrap();
    assert_eq!(
        (thread.version, thread.message_count, thread.status),
        (2, 2, ThreadStatus::Running)
    );
    assert_eq!(thread.run_id.as_deref(), Some("run-s"));
    assert_eq!(thread.holder.as_ref(), Some(&holder));
    assert_eq!(thread.tags, ["kind:test"]);
    assert_eq!(store.messages("t-started").await.unwrap(), prompt);

    let again = store
        .start_thread(NewThread::new("t-started"), &[], "run-t", &holder)
        .await;
    assert!(matches!(again, Err(StoreError::Exists(_))), "{again:?}");
    let kept = store.thread("t-started").await.unwrap().unwrap();
    assert_eq!((kept.version, kept.run_id.as_deref()), (2, Some("run-s")));
    assert_eq!(store.messages("t-started").await.unwrap(), prompt);
}
