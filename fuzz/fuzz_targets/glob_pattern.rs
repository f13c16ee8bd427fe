#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolsmith_fuzz::glob_pattern(data));
