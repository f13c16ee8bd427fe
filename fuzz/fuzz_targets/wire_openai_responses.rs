#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolsmith_fuzz::wire_openai_responses(data));
