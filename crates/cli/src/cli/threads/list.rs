//! `toolsmith threads list`: the stored threads as a table a person reads at a glance.
//!
//! One row per thread, the most recently written first: its id, where its run stands
//! ([`status`]), how many messages it holds, and when it was last written and created
//! ([`when::ago`](super::when::ago)). Columns are as wide as their widest cell. `--json` prints
//! the store's records unchanged (times in milliseconds since the epoch), for programs.

use toolsmith_store::{DEFAULT_LEASE, Holder, Store, Thread, ThreadQuery, ThreadStatus};

use super::when;

/// Prints up to `limit` threads of `store`, times seen from `now` (ms since the epoch).
pub(super) async fn list(
    store: &dyn Store,
    limit: usize,
    json: bool,
    now: u64,
) -> Result<(), String> {
    let query = ThreadQuery {
        limit: Some(limit),
        ..Default::default()
    };
    let threads = store.threads(&query).await.map_err(|e| e.to_string())?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&threads).unwrap_or_default()
        );
        return Ok(());
    }
    if threads.is_empty() {
        println!("no threads");
        return Ok(());
    }
    let me = Holder::current();
    let rows: Vec<[String; 5]> = threads
        .iter()
        .map(|t| {
            [
                t.id.clone(),
                status(t, now, &me),
                t.message_count.to_string(),
                when::ago(t.updated_at, now),
                when::ago(t.created_at, now),
            ]
        })
        .collect();
    let header = ["THREAD", "STATUS", "MESSAGES", "UPDATED", "CREATED"];
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    print_row(&header.map(str::to_owned), &widths);
    for row in &rows {
        print_row(row, &widths);
    }
    Ok(())
}

/// One row: the message count right-aligned, the other cells left-aligned, two spaces apart,
/// no trailing spaces.
fn print_row(cells: &[String; 5], widths: &[usize; 5]) {
    let mut line = String::new();
    for (i, (cell, width)) in cells.iter().zip(widths).enumerate() {
        if i > 0 {
            line.push_str("  ");
        }
        let pad = width - cell.chars().count();
        if i == 2 {
            line.extend(std::iter::repeat_n(' ', pad));
            line.push_str(cell);
        } else {
            line.push_str(cell);
            line.extend(std::iter::repeat_n(' ', pad));
        }
    }
    println!("{}", line.trim_end());
}

/// Where a thread's run stands, in words:
/// - `new`: created, never run;
/// - `finished`: its last run finished (the thread takes another message);
/// - `paused (N waiting)`: its run waits for N answers (approvals, client results);
/// - `failed`: its last run failed;
/// - `running (pid P)`: a live process holds its run (`on another host` when the holder is not
///   this host), its last sign of life younger than the lease;
/// - `interrupted`: marked running but no live process holds it (a crash, or a holder silent
///   for longer than the lease): `toolsmith run --resume` continues it;
/// - `handed back`: its run was released for any process to resume.
pub(super) fn status(thread: &Thread, now: u64, me: &Holder) -> String {
    match thread.status {
        ThreadStatus::Idle if thread.message_count == 0 => "new".to_owned(),
        ThreadStatus::Idle => "finished".to_owned(),
        ThreadStatus::Paused => format!("paused ({} waiting)", thread.pending.len()),
        ThreadStatus::Failed => "failed".to_owned(),
        ThreadStatus::Running => match &thread.holder {
            None => "handed back".to_owned(),
            Some(holder) => {
                let silent = now.saturating_sub(thread.updated_at);
                if holder.is_gone() || u128::from(silent) >= DEFAULT_LEASE.as_millis() {
                    "interrupted".to_owned()
                } else if holder.host == me.host {
                    format!("running (pid {})", holder.pid)
                } else {
                    format!("running (pid {} on another host)", holder.pid)
                }
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(status: ThreadStatus, holder: Option<Holder>) -> Thread {
        Thread {
            id: "t".into(),
            parent_id: None,
            tags: Vec::new(),
            version: 3,
            message_count: 2,
            status,
            run_id: None,
            holder,
            pending: Vec::new(),
            created_at: 1_000,
            updated_at: 2_000,
        }
    }

    #[test]
    fn a_running_thread_names_its_holder_or_why_none_holds_it() {
        let me = Holder::current();
        let held = thread(ThreadStatus::Running, Some(me.clone()));
        let pid = std::process::id();
        assert_eq!(status(&held, 3_000, &me), format!("running (pid {pid})"));
        let lease = DEFAULT_LEASE.as_millis() as u64;
        assert_eq!(status(&held, 2_000 + lease, &me), "interrupted");
        let elsewhere = Holder {
            host: format!("{} elsewhere", me.host),
            ..me.clone()
        };
        let remote = thread(ThreadStatus::Running, Some(elsewhere));
        assert_eq!(
            status(&remote, 3_000, &me),
            format!("running (pid {pid} on another host)")
        );
        let gone = Holder {
            started: me.started.wrapping_sub(1),
            ..me.clone()
        };
        let crashed = thread(ThreadStatus::Running, Some(gone));
        assert_eq!(status(&crashed, 3_000, &me), "interrupted");
        assert_eq!(
            status(&thread(ThreadStatus::Running, None), 3_000, &me),
            "handed back"
        );
    }

    #[test]
    fn an_idle_thread_is_new_or_finished() {
        let me = Holder::current();
        let mut idle = thread(ThreadStatus::Idle, None);
        assert_eq!(status(&idle, 3_000, &me), "finished");
        idle.message_count = 0;
        assert_eq!(status(&idle, 3_000, &me), "new");
        assert_eq!(
            status(&thread(ThreadStatus::Failed, None), 3_000, &me),
            "failed"
        );
    }
}
