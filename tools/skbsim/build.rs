//! rstest's `#[files]` globs the scenario directory at compile time: rebuild the tests
//! when scenarios come or go.
fn main() {
    println!("cargo:rerun-if-changed=../../scenarios");
}
