use super::*;

/// RFC 1071's definition, word by word, as the reference the fast sum must equal after
/// folding.
fn reference_sum(data: &[u8]) -> u32 {
    data.chunks(2)
        .map(|w| u32::from(w[0]) << 8 | u32::from(w.get(1).copied().unwrap_or(0)))
        .fold(0, add)
}

#[test]
fn rfc1071_example() {
    // RFC 1071 section 3: these 8 bytes sum to 0x2ddf0, which folds to 0xddf2.
    let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
    assert_eq!(reference_sum(&data), 0x2ddf0);
    assert_eq!(fold(0x2ddf0), 0xddf2);
    assert_eq!(fold(ones_complement_sum(&data, 0)), 0xddf2);
    assert_eq!(checksum(&data), !0xddf2);
}

#[test]
fn fast_sum_equals_the_reference_sum_for_every_length_and_alignment() {
    let data: Vec<u8> = (0..300u32).map(|i| (i * 37 + 11) as u8).collect();
    for start in 0..4 {
        for end in start..data.len() {
            let slice = &data[start..end];
            assert_eq!(
                fold(ones_complement_sum(slice, 0)),
                fold(reference_sum(slice)),
                "{start}..{end}"
            );
        }
    }
    assert_eq!(ones_complement_sum(&[], 0), 0);
    assert_eq!(fold(ones_complement_sum(&[0xff; 64], 0)), 0xffff);
}

#[test]
fn ipv4_header_verifies() {
    // A real IPv4 header with its checksum 0xb861 in place folds to 0xffff.
    let hdr = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00,
        0x01, 0xc0, 0xa8, 0x00, 0xc7,
    ];
    assert_eq!(fold(ones_complement_sum(&hdr, 0)), 0xffff);
    assert!(ipv4_header_ok(&hdr));
    let mut bad = hdr;
    bad[11] ^= 1;
    assert!(!ipv4_header_ok(&bad));
    let mut zeroed = hdr;
    zeroed[10] = 0;
    zeroed[11] = 0;
    assert_eq!(checksum(&zeroed), 0xb861);
}

#[test]
fn odd_length_and_chaining() {
    assert_eq!(ones_complement_sum(&[0xab], 0), 0xab00);
    let a = ones_complement_sum(&[0x12, 0x34], 0);
    let b = ones_complement_sum(&[0x56, 0x78], 0);
    assert_eq!(
        fold(add(a, b)),
        fold(ones_complement_sum(&[0x12, 0x34, 0x56, 0x78], 0))
    );
    assert_eq!(add(0xffff_ffff, 1), 1);
    assert_eq!(fold(0xffff_ffff), 0xffff);
}

#[test]
fn large_buffer_does_not_overflow() {
    let data = vec![0xffu8; 200_000];
    assert_eq!(fold(ones_complement_sum(&data, 0xffff_ffff)), 0xffff);
}

#[test]
fn pseudo_headers_by_hand() {
    // 10.0.0.1 -> 10.0.0.2, TCP, length 1420:
    // 0x0a00 + 0x0001 + 0x0a00 + 0x0002 + 0x0006 + 0x058c = 0x1995.
    assert_eq!(
        fold(pseudo_v4([10, 0, 0, 1], [10, 0, 0, 2], 6, 1420)),
        0x1995
    );
    // fd00::1 -> fd00::2, UDP, length 0x1_0004 (a BIG TCP-sized length):
    // 0xfd00 + 1 + 0xfd00 + 2 + 0x0001 + 0x0004 + 0x11 = 0x1fa19, folded 0xfa1a.
    let mut s = [0u8; 16];
    s[0] = 0xfd;
    s[15] = 1;
    let mut d = s;
    d[15] = 2;
    assert_eq!(fold(pseudo_v6(s, d, 17, 0x1_0004)), 0xfa1a);
    // The IpAddr form is the same sums; mixed families have none.
    let (v4a, v6a) = (IpAddr::from([10, 0, 0, 1]), IpAddr::from(s));
    assert_eq!(
        pseudo_header(v4a, IpAddr::from([10, 0, 0, 2]), 6, 1420).map(fold),
        Some(0x1995)
    );
    assert_eq!(
        pseudo_header(v6a, IpAddr::from(d), 17, 0x1_0004).map(fold),
        Some(0xfa1a)
    );
    assert_eq!(pseudo_header(v4a, v6a, 6, 0), None);
}

#[test]
fn replace2_matches_a_full_recompute() {
    // The header above with tot_len 0x0073 -> 0x36e8 (14056): recompute and compare.
    let mut hdr = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00,
        0x01, 0xc0, 0xa8, 0x00, 0xc7,
    ];
    let new = csum_replace2(0xb861, 0x0073, 0x36e8);
    hdr[2] = 0x36;
    hdr[3] = 0xe8;
    hdr[10] = 0;
    hdr[11] = 0;
    assert_eq!(new, checksum(&hdr));
    // Hand: ~0xb861 = 0x479e; + ~0x0073 (0xff8c) = 0x1472a, end-around 0x472b;
    // + 0x36e8 = 0x7e13; ~0x7e13 = 0x81ec.
    assert_eq!(new, 0x81ec);
}
