//! OS-facing backend.
