//! The integration tests of `toolsmith-core`, linked as one test binary: one module per subject
//! (tool specs and typed tools, toolsets, the schema transforms' properties).

mod schema_transforms;
mod spec;
mod toolset;
