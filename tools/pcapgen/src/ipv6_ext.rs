//! IPv6 extension headers between the fixed header and L4 (RFC 8200 section 4):
//!
//! ```toml
//! ipv6 = { src = "fd00::1", ext = [{ kind = "hbh" }, { kind = "dstopts", len = 16 },
//!          { kind = "routing" }, { kind = "fragment", offset = 0, more = true, id = 7 }] }
//! ```
//!
//! `hbh` (0), `routing` (43) and `dstopts` (60) are `len` bytes (a multiple of 8, default
//! 8; Hdr Ext Len = len / 8 - 1) filled with one PadN option (routing: type 0 with
//! Segments Left 0, which a receiver skips); `fragment` (44) is the 8-byte fragment
//! header. Each header's Next Header is the following one's, the last one's is the L4
//! protocol; the fixed header's names the first. The L4 checksum covers L4 only (the
//! pseudo-header's upper-layer length excludes extension headers).

use serde::Deserialize;

use sim::consts::{NEXTHDR_DEST, NEXTHDR_FRAGMENT, NEXTHDR_HOP, NEXTHDR_ROUTING};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtDesc {
    pub kind: String,
    pub len: Option<usize>,
    pub offset: Option<u16>,
    pub more: Option<bool>,
    pub id: Option<u32>,
}

/// One resolved extension header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ext {
    /// Hop-by-hop, routing or destination options: the protocol number and length.
    Options { nexthdr: u8, len: usize },
    /// The fragment header: offset in 8-byte units, M flag, identification.
    Fragment { offset: u16, more: bool, id: u32 },
}

impl Ext {
    pub fn protocol(&self) -> u8 {
        match self {
            Ext::Options { nexthdr, .. } => *nexthdr,
            Ext::Fragment { .. } => NEXTHDR_FRAGMENT,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Ext::Options { len, .. } => *len,
            Ext::Fragment { .. } => 8,
        }
    }

    /// Write this header with `next` as its Next Header into `out` (`self.len()` bytes).
    fn emit(&self, next: u8, out: &mut [u8]) {
        out.fill(0);
        out[0] = next;
        match self {
            Ext::Options { nexthdr, len } => {
                out[1] = (len / 8 - 1) as u8;
                if *nexthdr == NEXTHDR_ROUTING {
                    // Routing Type 0, Segments Left 0: skipped by the receiver.
                    return;
                }
                // PadN (option type 1) over the rest: 2 bytes of type/length + data.
                out[2] = 1;
                out[3] = (len - 4) as u8;
            }
            Ext::Fragment { offset, more, id } => {
                let w = (offset << 3) | u16::from(*more);
                out[2..4].copy_from_slice(&w.to_be_bytes());
                out[4..8].copy_from_slice(&id.to_be_bytes());
            }
        }
    }
}

/// Resolve the `ext` list of an `ipv6` table.
pub fn resolve(descs: &[ExtDesc]) -> Result<Vec<Ext>, String> {
    descs
        .iter()
        .map(|d| {
            let nexthdr = match d.kind.as_str() {
                "hbh" => NEXTHDR_HOP,
                "routing" => NEXTHDR_ROUTING,
                "dstopts" => NEXTHDR_DEST,
                "fragment" => {
                    if d.len.is_some_and(|l| l != 8) {
                        return Err("a fragment header is 8 bytes".to_string());
                    }
                    let offset = d.offset.unwrap_or(0);
                    if offset > 0x1fff {
                        return Err(format!("fragment offset {offset} is wider than 13 bits"));
                    }
                    return Ok(Ext::Fragment {
                        offset,
                        more: d.more.unwrap_or(false),
                        id: d.id.unwrap_or(0),
                    });
                }
                other => {
                    return Err(format!(
                        "ext kind {other:?}: one of \"hbh\", \"routing\", \"dstopts\", \"fragment\""
                    ))
                }
            };
            if d.offset.is_some() || d.more.is_some() || d.id.is_some() {
                return Err(format!(
                    "{}: offset, more and id are for \"fragment\"",
                    d.kind
                ));
            }
            let len = d.len.unwrap_or(8);
            if len < 8 || len % 8 != 0 || len > 2048 {
                return Err(format!(
                    "{}: len {len} is not a multiple of 8 from 8 to 2048",
                    d.kind
                ));
            }
            Ok(Ext::Options { nexthdr, len })
        })
        .collect()
}

/// Total bytes of `exts`.
pub fn total_len(exts: &[Ext]) -> usize {
    exts.iter().map(Ext::len).sum()
}

/// Write `exts` into `out` (exactly [`total_len`] bytes), the last naming `l4` as next.
pub fn emit(exts: &[Ext], l4: u8, out: &mut [u8]) {
    let mut at = 0;
    for (i, e) in exts.iter().enumerate() {
        let next = exts.get(i + 1).map_or(l4, Ext::protocol);
        e.emit(next, &mut out[at..at + e.len()]);
        at += e.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(kind: &str) -> ExtDesc {
        ExtDesc {
            kind: kind.into(),
            len: None,
            offset: None,
            more: None,
            id: None,
        }
    }

    #[test]
    fn headers_chain_to_the_l4_protocol() {
        let mut frag = d("fragment");
        frag.offset = Some(185);
        frag.more = Some(true);
        frag.id = Some(0x0102_0304);
        let mut dst = d("dstopts");
        dst.len = Some(16);
        let exts = resolve(&[d("hbh"), dst, d("routing"), frag]).unwrap();
        assert_eq!(total_len(&exts), 8 + 16 + 8 + 8);
        let mut out = vec![0xaa; total_len(&exts)];
        emit(&exts, 6, &mut out);
        // HBH: next = dstopts (60), len 0, PadN of 4 data bytes.
        assert_eq!(&out[0..8], &[60, 0, 1, 4, 0, 0, 0, 0]);
        // Dest options, 16 bytes: next = routing (43), Hdr Ext Len 1, PadN of 12.
        assert_eq!(&out[8..12], &[43, 1, 1, 12]);
        assert!(out[12..24].iter().all(|&b| b == 0));
        // Routing: next = fragment (44), type 0, segments left 0.
        assert_eq!(&out[24..32], &[44, 0, 0, 0, 0, 0, 0, 0]);
        // Fragment: next = TCP, offset 185 (1480 bytes) << 3 | M = 0x05c9.
        assert_eq!(&out[32..40], &[6, 0, 0x05, 0xc9, 1, 2, 3, 4]);
    }

    #[test]
    fn bad_lists_are_errors() {
        let mut odd = d("hbh");
        odd.len = Some(12);
        assert!(resolve(&[odd]).unwrap_err().contains("multiple of 8"));
        assert!(resolve(&[d("esp")]).unwrap_err().contains("one of"));
        let mut misplaced = d("hbh");
        misplaced.more = Some(true);
        assert!(resolve(&[misplaced])
            .unwrap_err()
            .contains("for \"fragment\""));
        let mut far = d("fragment");
        far.offset = Some(0x2000);
        assert!(resolve(&[far]).unwrap_err().contains("13 bits"));
    }
}
