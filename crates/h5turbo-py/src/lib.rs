//! PyO3 bindings (filled in once the engine lands).
