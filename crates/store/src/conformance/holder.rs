//! The holder of a running thread: recorded by its claim, kept while it runs.

use toolsmith_core::Message;

use super::write;
use crate::{Holder, NewThread, Store, ThreadStatus, ThreadWrite};

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
