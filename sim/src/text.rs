//! Hand-written formatting of what every trace line and pcapng comment carries:
//! decimal and hex numbers, MAC and IPv4 addresses, timestamps.
//!
//! `write!` through core::fmt costs a hundred-odd instructions per argument (argument
//! tables, padding rules) and pnet's MacAddr Display a `write!` per byte; with several
//! lines per frame that was most of a traced replay's time. These print exactly what the
//! named format strings print; `text_tests` checks them against core::fmt.

/// `n` in decimal, as `{}` prints it (itoa: no fmt machinery, no allocation). Inline:
/// called out of line it cost a traced replay 4% more instructions (callgrind, tun-read).
#[inline]
pub fn dec(out: &mut String, n: impl itoa::Integer) {
    out.push_str(itoa::Buffer::new().format(n));
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// `n` in lowercase hex with at least `digits` digits (at most 16), as `{:0digits$x}`.
pub fn hex(out: &mut String, n: u64, digits: usize) {
    let mut buf = [b'0'; 16];
    let needed = (u64::BITS - n.leading_zeros()).div_ceil(4) as usize;
    let len = needed.max(digits.min(16)).max(1);
    for (k, b) in buf[16 - len..].iter_mut().rev().enumerate() {
        *b = HEX[((n >> (4 * k)) & 0xf) as usize];
    }
    // Every byte is an ASCII hex digit.
    out.push_str(std::str::from_utf8(&buf[16 - len..]).unwrap_or_default());
}

/// Bytes from hex digit pairs (either case); spaces, colons and newlines between pairs
/// are skipped. Err: what is wrong, for a one-line message.
pub fn unhex(s: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<u8> = s
        .bytes()
        .filter(|b| !matches!(b, b' ' | b':' | b'\n' | b'\t'))
        .collect();
    if !digits.len().is_multiple_of(2) {
        return Err(format!(
            "{} hex digits, not a whole number of bytes",
            digits.len()
        ));
    }
    digits
        .chunks(2)
        .map(|p| match (hex_digit(p[0]), hex_digit(p[1])) {
            (Some(hi), Some(lo)) => Ok(hi << 4 | lo),
            _ => Err(format!(
                "{:?} is not a hex byte",
                String::from_utf8_lossy(p)
            )),
        })
        .collect()
}

fn hex_digit(c: u8) -> Option<u8> {
    char::from(c).to_digit(16).map(|d| d as u8)
}

/// `n` as `{:#0w$x}` prints it with `w = digits + 2`: "0x" and at least `digits` digits
/// (`{:#06x}` is `hex0x(out, n, 4)`).
pub fn hex0x(out: &mut String, n: u64, digits: usize) {
    out.push_str("0x");
    hex(out, n, digits);
}

/// A MAC address as pnet's MacAddr prints it: "02:00:00:00:00:01".
pub fn mac(out: &mut String, m: &[u8; 6]) {
    let mut buf = [b':'; 17];
    for (i, b) in m.iter().enumerate() {
        buf[3 * i] = HEX[usize::from(b >> 4)];
        buf[3 * i + 1] = HEX[usize::from(b & 0xf)];
    }
    out.push_str(std::str::from_utf8(&buf).unwrap_or_default());
}

/// An IPv4 address as Ipv4Addr prints it: "10.0.0.1".
pub fn ipv4(out: &mut String, a: [u8; 4]) {
    let mut buf = [b'.'; 15];
    let mut n = 0;
    for (i, b) in a.iter().enumerate() {
        if i > 0 {
            n += 1; // the '.' already there
        }
        if *b >= 100 {
            buf[n] = b'0' + b / 100;
            n += 1;
        }
        if *b >= 10 {
            buf[n] = b'0' + b / 10 % 10;
            n += 1;
        }
        buf[n] = b'0' + b % 10;
        n += 1;
    }
    // Every byte is an ASCII digit or '.'.
    out.push_str(std::str::from_utf8(&buf[..n]).unwrap_or_default());
}

/// A timestamp in seconds with nanoseconds: "1.000000001" (`{}.{:09}`).
pub fn ts(out: &mut String, ns: u64) {
    dec(out, ns / 1_000_000_000);
    out.push('.');
    let mut b = itoa::Buffer::new();
    let frac = b.format(ns % 1_000_000_000);
    for _ in frac.len()..9 {
        out.push('0');
    }
    out.push_str(frac);
}

/// Ascending numbers as runs: `0-3 5 7-8` (a run of one is its number); returns how many
/// numbers there were. The one range format of the traces (GRO's frames, vhost's
/// batches).
pub fn ranges_into(out: &mut String, numbers: impl IntoIterator<Item = u64>) -> usize {
    fn run(out: &mut String, first: bool, (a, b): (u64, u64)) {
        if !first {
            out.push(' ');
        }
        dec(out, a);
        if b != a {
            out.push('-');
            dec(out, b);
        }
    }
    let (mut n, mut cur, mut first) = (0, None::<(u64, u64)>, true);
    for f in numbers {
        n += 1;
        cur = match cur {
            Some((a, b)) if b.checked_add(1) == Some(f) => Some((a, f)),
            Some(r) => {
                run(out, first, r);
                first = false;
                Some((f, f))
            }
            None => Some((f, f)),
        };
    }
    if let Some(r) = cur {
        run(out, first, r);
    }
    n
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
