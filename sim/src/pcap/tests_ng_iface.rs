//! A pcapng packet block naming an interface its section did not describe: the error
//! says what the section has, not "describes 0".

use super::tests::ng_file;
use super::*;

const ETH14: [u8; 14] = [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0];

fn err(bytes: &[u8]) -> String {
    let r: Result<Vec<Frame>, PcapError> =
        PcapReader::from_reader(bytes, "in.pcapng").and_then(|r| r.collect());
    match r {
        Ok(frames) => panic!("expected an error, read {} frames", frames.len()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_section_without_interfaces_says_so() {
    let e = err(&ng_file(false, &[], &[(0, 1, &ETH14)]));
    assert!(
        e.contains(
            "enhanced packet block refers to interface 0 but the section has no interface description block"
        ),
        "{e}"
    );
}

#[test]
fn a_section_with_interfaces_names_their_range() {
    let e = err(&ng_file(
        false,
        &[(1, Vec::new()), (1, Vec::new())],
        &[(5, 1, &ETH14)],
    ));
    assert!(
        e.contains(
            "refers to interface 5 but the section has only 2 interface description blocks (interfaces 0 to 1)"
        ),
        "{e}"
    );
}
