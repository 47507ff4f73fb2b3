use super::*;

fn with(f: impl FnOnce(&mut String)) -> String {
    let mut s = String::from("> ");
    f(&mut s);
    s
}

#[test]
fn decimal_and_hex_print_what_core_fmt_prints() {
    for n in [0u64, 1, 9, 10, 255, 4096, 65535, 1 << 32, u64::MAX] {
        assert_eq!(with(|s| dec(s, n)), format!("> {n}"));
        for digits in [0, 1, 2, 4, 8, 16] {
            assert_eq!(with(|s| hex(s, n, digits)), format!("> {n:0digits$x}"));
            let w = digits + 2;
            assert_eq!(with(|s| hex0x(s, n, digits)), format!("> {n:#0w$x}"));
        }
    }
    assert_eq!(with(|s| dec(s, -5i32)), "> -5");
}

#[test]
fn addresses_print_as_pnet_and_std_print_them() {
    let m = [0x02, 0x00, 0xab, 0x0c, 0xff, 0x10];
    assert_eq!(
        with(|s| mac(s, &m)),
        format!(
            "> {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            m[0], m[1], m[2], m[3], m[4], m[5]
        )
    );
    for a in [
        [0, 0, 0, 0],
        [10, 0, 0, 1],
        [255, 255, 255, 255],
        [9, 99, 101, 250],
        [192, 168, 100, 7],
    ] {
        assert_eq!(
            with(|s| ipv4(s, a)),
            format!("> {}", std::net::Ipv4Addr::from(a))
        );
    }
}

#[test]
fn timestamps_keep_nine_fraction_digits() {
    for ns in [
        0u64,
        1,
        999_999_999,
        1_000_000_000,
        1_000_001_000,
        12_345_678_901_234,
    ] {
        let want = format!("> {}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
        assert_eq!(with(|s| ts(s, ns)), want);
    }
}

#[test]
fn ranges_are_runs_separated_by_spaces() {
    let r = |v: &[u64]| {
        let mut s = String::new();
        let n = ranges_into(&mut s, v.iter().copied());
        (s, n)
    };
    assert_eq!(r(&[0, 1, 2, 3, 5, 7, 8]), ("0-3 5 7-8".to_string(), 7));
    assert_eq!(r(&[4]), ("4".to_string(), 1));
    assert_eq!(r(&[]), (String::new(), 0));
    // No overflow past the largest number.
    let top = [u64::MAX - 1, u64::MAX];
    assert_eq!(r(&top), (format!("{}-{}", top[0], top[1]), 2));
}
