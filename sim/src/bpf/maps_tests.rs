//! Tests of maps.rs.

use super::*;

fn k(v: u32) -> [u8; 4] {
    v.to_le_bytes()
}

#[test]
fn array_semantics() {
    let mut m = Maps::new();
    let i = m.create("counters", MapSpec::array(8, 4)).unwrap();
    let a = m.get_mut(i).unwrap();
    assert_eq!(a.len(), 4);
    assert_eq!(a.read_u64(3), Some(0));
    a.update(&k(3), &9u64.to_le_bytes(), BPF_ANY).unwrap();
    assert_eq!(a.read_u64(3), Some(9));
    assert_eq!(a.update(&k(4), &[0; 8], BPF_ANY), Err(MapErr::TooBig));
    assert_eq!(a.update(&k(0), &[0; 8], BPF_NOEXIST), Err(MapErr::Exists));
    assert_eq!(a.update(&k(0), &[0; 8], 7), Err(MapErr::Inval));
    assert_eq!(a.update(&k(0), &[0; 7], BPF_ANY), Err(MapErr::Inval));
    assert_eq!(a.delete(&k(0)), Err(MapErr::Inval));
    assert_eq!(a.lookup(&k(9)), Err(MapErr::NoEnt));
    assert_eq!(a.dump().len(), 4);
    // 8-byte values sit 16 bytes apart for the program: the gap catches overruns.
    assert_eq!(a.value_offset(&k(2)), Some(32));
    assert_eq!(a.value_mem(32, 8, true).map(|v| v.to_vec()), Ok(vec![0; 8]));
    assert!(a.value_mem(36, 8, false).is_err());
    assert!(a.value_mem(40, 1, false).is_err());
    assert_eq!(
        a.value_mem(48, 8, false).map(|v| v.to_vec()),
        Ok(9u64.to_le_bytes().to_vec())
    );
    assert!(m.create("counters", MapSpec::array(8, 4)).is_err());
    assert!(m
        .create("bad", MapSpec::new(MapType::Array, 8, 8, 4))
        .is_err());
    assert!(m.create("zero", MapSpec::array(8, 0)).is_err());
}

#[test]
fn hash_enforces_max_entries_and_flags() {
    let mut m = Maps::new();
    m.create("h", MapSpec::hash(4, 4, 2)).unwrap();
    let h = m.by_name_mut("h").unwrap();
    assert_eq!(h.update(&k(1), &k(10), BPF_EXIST), Err(MapErr::NoEnt));
    h.update(&k(1), &k(10), BPF_NOEXIST).unwrap();
    h.update(&k(2), &k(20), BPF_ANY).unwrap();
    assert_eq!(h.update(&k(3), &k(30), BPF_ANY), Err(MapErr::TooBig));
    assert_eq!(h.update(&k(1), &k(11), BPF_NOEXIST), Err(MapErr::Exists));
    h.update(&k(1), &k(11), BPF_EXIST).unwrap();
    assert_eq!(h.lookup(&k(1)), Ok(&k(11)[..]));
    assert_eq!(h.delete(&k(3)), Err(MapErr::NoEnt));
    h.delete(&k(1)).unwrap();
    h.update(&k(3), &k(30), BPF_ANY).unwrap();
    // Slot 0 was freed by the delete and is reused.
    assert_eq!(h.value_offset(&k(3)), Some(0));
    let d = h.dump();
    assert_eq!(
        d,
        vec![
            (k(2).to_vec(), k(20).to_vec()),
            (k(3).to_vec(), k(30).to_vec())
        ]
    );
    assert_eq!(MapErr::TooBig.errno(), 7);
    assert_eq!(MapErr::TooBig.to_string(), "E2BIG");
}

#[test]
fn devmaps_hold_ifindexes() {
    let mut m = Maps::new();
    let d = m.create("tx", MapSpec::devmap(4)).unwrap();
    let dm = m.get_mut(d).unwrap();
    assert!(dm.is_empty());
    dm.update(&k(1), &k(7), BPF_ANY).unwrap();
    assert_eq!(dm.dev_ifindex(1), Some(7));
    assert_eq!(dm.dev_ifindex(0), None);
    dm.update(&k(1), &k(0), BPF_ANY).unwrap();
    assert_eq!(dm.dev_ifindex(1), None);
    assert!(dm.value_mem(0, 4, true).is_err());
    let mut v8 = [0u8; 8];
    v8[..4].copy_from_slice(&k(5));
    v8[4..].copy_from_slice(&(-1i32).to_le_bytes());
    let dh = m
        .create("txh", MapSpec::new(MapType::DevmapHash, 4, 8, 1))
        .unwrap();
    let dh = m.get_mut(dh).unwrap();
    dh.update(&k(100), &v8, BPF_ANY).unwrap();
    assert_eq!(dh.lookup(&k(100)), Ok(&[5, 0, 0, 0, 0, 0, 0, 0][..]));
    assert_eq!(dh.update(&k(101), &v8, BPF_ANY), Err(MapErr::TooBig));
    assert_eq!(dh.update(&k(101), &[0; 8], BPF_ANY), Err(MapErr::Inval));
    assert!(m
        .create("baddev", MapSpec::new(MapType::Devmap, 4, 2, 1))
        .is_err());
}

#[test]
fn resolve_creates_checks_and_initialises() {
    let mut m = Maps::new();
    assert_eq!(
        m.resolve(&MapRef::named("nope")),
        Err(BpfError::Unbound { map: "nope".into() })
    );
    let mut r = MapRef::defined(".rodata", MapSpec::array(6, 1));
    r.init = Some(b"hello\0".to_vec());
    let i = m.resolve(&r).unwrap();
    assert_eq!(m.resolve(&MapRef::named(".rodata")), Ok(i));
    assert_eq!(m.get(i).unwrap().lookup_u32(0), Some(&b"hello\0"[..]));
    assert!(m
        .resolve(&MapRef::defined(".rodata", MapSpec::array(8, 1)))
        .is_err());
    assert_eq!(m.iter().count(), 1);
    assert_eq!(MapType::from_u32(25), Some(MapType::DevmapHash));
    assert_eq!(MapType::from_u32(3), None);
}
