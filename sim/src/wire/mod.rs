//! Packet views (see wire/mod.rs).
