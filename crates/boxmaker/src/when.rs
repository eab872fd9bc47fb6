//! Times a person reads: the front's (`front::when`), the one place they are worded, so the
//! CLI, the approvals page and an elicitation in the agent's client say them alike.

pub use front::when::*;
