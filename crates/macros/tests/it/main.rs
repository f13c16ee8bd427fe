//! The integration tests of `toolsmith-macros`, linked as one test binary: `#[tool]` against
//! `toolsmith-core`.

mod tool_macro;
