//! File open overhead of the confined filesystem: `RootDir::open_file` (openat2 beneath the root
//! through cap-std, plus the path checks and a regular-file check) against a plain
//! `std::fs::File::open` of the same absolute path.
//!
//! Run: `cargo bench -p toolsmith-sandbox --bench open`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use toolsmith_sandbox::RootDir;

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src/module")).unwrap();
    std::fs::write(dir.path().join("src/module/file.rs"), "fn main() {}\n").unwrap();
    let root = RootDir::open(dir.path()).unwrap();
    let absolute = root.path().join("src/module/file.rs");

    let mut group = c.benchmark_group("open");
    group.bench_function("std_open_absolute", |b| {
        b.iter(|| black_box(std::fs::File::open(black_box(&absolute)).unwrap()))
    });
    group.bench_function("rootdir_open_file", |b| {
        b.iter(|| black_box(root.open_file(black_box("src/module/file.rs")).unwrap()))
    });
    group.bench_function("cap_std_open", |b| {
        b.iter(|| black_box(root.dir().open(black_box("src/module/file.rs")).unwrap()))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
