//! `skbsim lab vlan`: an 802.1Q device over a tap in the guest, read with tx VLAN offload
//! on (the hw-accel splice) and off (software insertion), and received back untagged.

use std::process::ExitCode;

use serde_json::{json, Value};

use super::hex::{hex, unhex};
use super::skbsim::{outln, Skbsim};
use super::{boot_report, boot_with, LabOpts};
use crate as lab;
use crate::vlan;

pub(super) fn guest_vlan(sk: &dyn Skbsim) -> Result<ExitCode, String> {
    sk.tap_ready("lab guest-vlan")?;
    let obs = vlan::vlan_device_check().map_err(|e| format!("vlan check: {e}"))?;
    for o in obs {
        outln!(
            sk,
            "{}",
            json!({
                "case": o.case,
                "pi": o.pi.map(|p| json!({"flags": p.flags, "proto": p.proto})),
                "vnet": o.vnet.map(|v| json!({"flags": v.flags, "gso_type": v.gso_type, "hdr_len": v.hdr_len,
                    "gso_size": v.gso_size, "csum_start": v.csum_start, "csum_offset": v.csum_offset})),
                "frame": hex(&o.frame),
                "aux_vlan": o.aux_vlan.map(|(valid, tci)| json!({"valid": valid, "tci": tci})),
                "tx_bytes": o.tx_bytes,
            })
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One line for an observation of the 802.1Q check.
fn vlan_line(o: &Value) -> String {
    let frame = o
        .get("frame")
        .and_then(Value::as_str)
        .and_then(unhex)
        .unwrap_or_default();
    let tag = match frame.get(12..16) {
        Some([0x81, 0x00, hi, lo]) => format!(
            "802.1Q tag vid {} at byte 12",
            u16::from_be_bytes([*hi, *lo]) & 0xfff
        ),
        _ => format!(
            "untagged (ethertype {:02x}{:02x})",
            frame.get(12).copied().unwrap_or(0),
            frame.get(13).copied().unwrap_or(0)
        ),
    };
    let mut s = format!("{} bytes, {tag}", frame.len());
    if let Some(pi) = o.get("pi").filter(|p| !p.is_null()) {
        s.push_str(&format!(
            ", pi flags {:#06x} proto {:#06x}",
            pi.get("flags").and_then(Value::as_u64).unwrap_or(0),
            pi.get("proto").and_then(Value::as_u64).unwrap_or(0)
        ));
    }
    if let Some(v) = o.get("vnet").filter(|p| !p.is_null()) {
        s.push_str(&format!(", vnet {v}"));
    }
    if let Some(t) = o.get("tx_bytes").and_then(Value::as_u64) {
        s.push_str(&format!(", tx_bytes {t}"));
    }
    if let Some(a) = o.get("aux_vlan").filter(|p| !p.is_null()) {
        s.push_str(&format!(", AF_PACKET vlan {a}"));
    }
    s
}

pub(super) fn vlan(opts: &LabOpts, sk: &dyn Skbsim) -> Result<ExitCode, String> {
    let script = format!("{} lab guest-vlan\n", lab::GUEST_SKBSIM);
    let modules = vec!["tun".to_string(), "8021q".to_string()];
    let (run, setup) = boot_with(opts, "vlan", script, modules, Vec::new(), true, None)?;
    let obs: Vec<Value> = run
        .boot
        .output
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let find = |case: &str| {
        obs.iter()
            .find(|o| o.get("case").and_then(Value::as_str) == Some(case))
    };
    let frame_of = |o: Option<&Value>| {
        o.and_then(|o| o.get("frame"))
            .and_then(Value::as_str)
            .and_then(unhex)
    };
    let proto_of = |o: Option<&Value>| {
        o.and_then(|o| o.get("pi"))
            .and_then(|p| p.get("proto"))
            .and_then(Value::as_u64)
    };
    let (on, off, rx) = (find("tx offload on"), find("tx offload off"), find("rx"));
    let sent = vlan::udp_frame(64);
    let mut tagged = sent[..12].to_vec();
    tagged.extend([0x81, 0x00, 0x00, vlan::VID as u8]);
    tagged.extend(&sent[12..]);
    let checks = [
        (
            "the tap reads the tagged frame with offload on",
            frame_of(on).as_deref() == Some(&tagged[..]),
        ),
        (
            "the same bytes with offload off (software insertion)",
            frame_of(off).as_deref() == Some(&tagged[..]),
        ),
        (
            "pi.proto is the inner ethertype 0x0800 with offload on (hw-accel splice)",
            proto_of(on) == Some(0x0800),
        ),
        (
            "pi.proto is the TPID ETH_P_8021Q with offload off (vlan_insert_tag_set_proto)",
            proto_of(off) == Some(u64::from(sim::consts::ETH_P_8021Q)),
        ),
        (
            "a tagged frame written into the tap reaches the VLAN device untagged",
            frame_of(rx).as_deref() == Some(&sent[..]),
        ),
    ];
    let ok = run.boot.rc == 0 && checks.iter().all(|c| c.1);
    let (boot, line) = boot_report(&run);
    if opts.guest.json {
        outln!(
            sk,
            "{}",
            json!({"ok": ok, "observations": obs, "checks": checks.iter().map(|c| json!({"check": c.0, "ok": c.1})).collect::<Vec<_>>(),
                   "stderr": run.boot.stderr, "setup": setup.0, "boot": boot})
        )?;
    } else {
        outln!(
            sk,
            "802.1Q device {} (vid {}) over tap {} in the guest {}:",
            vlan::VLAN_DEV,
            vlan::VID,
            vlan::TAP,
            run.boot.guest_kernel
        )?;
        for o in &obs {
            outln!(
                sk,
                "  {:<15} {}",
                o.get("case").and_then(Value::as_str).unwrap_or("?"),
                vlan_line(o)
            )?;
        }
        for (what, good) in &checks {
            outln!(sk, "  {} {what}", if *good { "ok  " } else { "FAIL" })?;
        }
        if run.boot.rc != 0 {
            eprint!("{}", run.boot.stderr);
        }
        eprintln!("lab: {}", setup.1);
        eprintln!("lab: {line}");
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
