//! The checks across a scenario's tables, and the scenario they make: which tables the
//! pipeline reads, what a pipeline fixes about its device, and the settings the profile
//! or the pipeline's real arm cannot take. Each table was checked on its own as serde
//! read it (`file.rs`).

use crate::bridge::Attach;
use crate::gro::plan::{gro_plan, GroPlan};
use crate::tun::{DeviceKind, TunConfig};
use crate::xdp::XdpMode;

use super::file::{tun_gro_unmodelled, DeviceKeys, ScenarioFile, SkbPlan};
use super::{Pipeline, Scenario, XdpSpec};

impl TryFrom<ScenarioFile> for Scenario {
    type Error = String;

    /// Paths stay as written (relative to the scenario's directory): `Scenario::parse`
    /// resolves them and sets `path` and `name`.
    fn try_from(f: ScenarioFile) -> Result<Scenario, String> {
        tables_read(&f)?;
        let device = device(&f)?;
        let xdp = xdp(&f, device.kind)?;
        let attach = attach(&f, device.kind)?;
        let gro = gro(&f, &device)?;
        let input = input(&f)?;
        let skb = f.skb.unwrap_or_default();
        Ok(Scenario {
            path: Default::default(),
            name: String::new(),
            description: f.description,
            input,
            pipeline: f.pipeline,
            profile: f.profile,
            sim_only: f.sim_only,
            attach,
            device,
            reader: f.reader.map(|r| r.0).unwrap_or_default(),
            skb: skb.recipe,
            skb_overrides: skb.overrides,
            writer: f.writer.map(|w| w.0).unwrap_or_default(),
            xdp,
            redirect: f.redirect.map(|d| d.config),
            gro,
            guest: f.vhost,
            queues: f.queues.map(|q| q.0),
            link: f.link,
            exec: f.exec.map(|e| e.0),
        })
    }
}

/// The capture: every pipeline but `exec` reads one; for `exec` it is optional: the
/// frames its far side sends the program's device when it first comes up
/// (docs/exec.md#scenarios).
fn input(f: &ScenarioFile) -> Result<std::path::PathBuf, String> {
    match (&f.input, f.pipeline) {
        (None, Pipeline::Exec) => Ok(Default::default()),
        (Some(i), _) => Ok(i.clone()),
        (None, _) => Err("missing field `input`".into()),
    }
}

/// Every table the file has is one the pipeline reads ([`Pipeline::tables`]); `attach`
/// only for tun-read; vhost-tx has its guest.
fn tables_read(f: &ScenarioFile) -> Result<(), String> {
    let uses = f.pipeline.tables();
    if let Some((table, _)) = f
        .tables()
        .into_iter()
        .find(|(t, present)| *present && !uses.contains(t))
    {
        let list: Vec<String> = uses.iter().map(|t| format!("[{t}]")).collect();
        return Err(format!(
            "[{table}] is not used by pipeline {} (it reads {})",
            f.pipeline.name(),
            list.join(", ")
        ));
    }
    if f.attach.is_some() && f.pipeline != Pipeline::TunRead {
        return Err("attach: only the tun-read pipeline has a bridge in front of the tap".into());
    }
    if f.vhost.is_none() && f.pipeline == Pipeline::VhostTx {
        return Err("pipeline vhost-tx needs a [vhost] table".into());
    }
    if let Some(q) = &f.queues {
        queues_for_pipeline(f, &q.0)?;
    }
    if f.exec.is_none() && f.pipeline == Pipeline::Exec {
        return Err("pipeline exec needs an [exec] table (the program to run)".into());
    }
    Ok(())
}

/// `[queues]` as each pipeline takes it: tun-read transmits, so it writes only through
/// `op = "write"` events; tap-write and vhost-tx send every frame on a file (`write_on`)
/// and leave out what their multiqueue model does not have (docs/tap-write.md#multiqueue,
/// docs/vhost-tx.md#multiqueue).
fn queues_for_pipeline(f: &ScenarioFile, q: &super::QueuePlan) -> Result<(), String> {
    use super::QueueOp;
    match f.pipeline {
        Pipeline::TapWrite | Pipeline::VhostTx => {
            let name = f.pipeline.name();
            if let Some(i) = q.events.iter().position(|e| e.op == QueueOp::Write) {
                return Err(format!(
                    "queues.event[{i}]: op = \"write\" is tun-read's; {name} sends every frame on a file (write_on)"
                ));
            }
            if f.redirect.is_some() {
                return Err(format!(
                    "queues: [redirect] beside a multiqueue tap is not modelled by {name}"
                ));
            }
            let generic = f.xdp.as_ref().is_some_and(|x| x.mode == XdpMode::Generic);
            if f.pipeline == Pipeline::VhostTx && generic {
                return Err("queues: a generic XDP program with vhost-tx [queues]: its XDP_TX takes automq's queue, and the flow table's learning from vhost's packets (tun_xdp_one -> tun_flow_update) is not modelled".into());
            }
        }
        _ if !q.write_on.is_empty() => {
            return Err(format!(
                "queues.write_on: only tap-write and vhost-tx send frames on files, not {}",
                f.pipeline.name()
            ));
        }
        _ => {}
    }
    Ok(())
}

/// `[device]` with what the pipeline fixes: vhost-tx's tap is QEMU's, tap-gro's has
/// IFF_NAPI. A key the file wrote against that is an error.
fn device(f: &ScenarioFile) -> Result<TunConfig, String> {
    let keys = f.device.as_ref().map(|d| &d.keys);
    let written = |key: fn(&DeviceKeys) -> Option<bool>| keys.and_then(key);
    let mut device = f
        .device
        .as_ref()
        .map(|d| d.config.clone())
        .unwrap_or_default();
    if device.offloads.udp_tunnel_gso && !f.profile.tun_ioctl.udp_tunnel_gso {
        return Err(format!(
            "device.offloads: {} has no \"udp_tunnel_gso\" (TUNSETOFFLOAD refuses TUN_F_UDP_TUNNEL_GSO with EINVAL before v6.17)",
            f.profile.name
        ));
    }
    if let Some(guest) = &f.vhost {
        // QEMU's tap: IFF_NO_PI | IFF_VNET_HDR with the negotiated header size.
        if written(|k| k.no_pi) == Some(false) || written(|k| k.vnet_hdr) == Some(false) {
            return Err("device: a vhost-net tap has no_pi and vnet_hdr".into());
        }
        device.no_pi = true;
        device.vnet_hdr = true;
        device.vnet_hdr_sz = guest.hdr_len;
    }
    if f.pipeline == Pipeline::TapGro {
        // tap-gro's tap: IFF_TAP | IFF_NAPI, IFF_NO_PI unless the scenario writes a PI.
        if device.kind != DeviceKind::Tap {
            return Err(tun_gro_unmodelled("device.kind"));
        }
        if written(|k| k.napi) == Some(false) {
            return Err("device: the tap-gro tap has IFF_NAPI".into());
        }
        device.napi = true;
        if written(|k| k.no_pi).is_none() {
            device.no_pi = true;
        }
    }
    Ok(device)
}

/// `[xdp]` on a device and profile that can run it.
fn xdp(f: &ScenarioFile, kind: DeviceKind) -> Result<Option<XdpSpec>, String> {
    let Some(x) = &f.xdp else {
        return Ok(None);
    };
    if kind == DeviceKind::Tun {
        // tun_netdev_ops has no ndo_bpf (drivers/net/tun.c), so dev_xdp_attach
        // (net/core/dev.c) refuses driver mode with EOPNOTSUPP; generic XDP on a
        // device without a MAC header is not modelled (docs/tap-write.md#tun-device).
        return Err(match x.mode {
            XdpMode::Native => "xdp.mode: \"native\" with a tun device: an IFF_TUN device has no ndo_bpf, so the kernel refuses driver-mode XDP (EOPNOTSUPP)".to_string(),
            XdpMode::Generic => "xdp: generic XDP on a tun device (no MAC header) is not modelled".to_string(),
        });
    }
    if !f.profile.tun_write.xdp {
        return Err(format!("xdp: {} has no XDP on tap (v4.14)", f.profile.name));
    }
    Ok(Some(x.clone()))
}

/// How frames reach the tap: only an Ethernet device can be a bridge port.
fn attach(f: &ScenarioFile, kind: DeviceKind) -> Result<Attach, String> {
    match f.attach {
        None => Ok(Attach::default_for(kind)),
        Some(a) if a != Attach::Direct && kind == DeviceKind::Tun => Err(format!(
            "attach: \"{}\" with a tun device: only an Ethernet device can be a bridge port (br_add_if); use \"direct\"",
            a.name()
        )),
        Some(a) => Ok(a),
    }
}

/// `[gro]` against the profile, and what the pipeline's real arm can set.
fn gro(f: &ScenarioFile, device: &TunConfig) -> Result<GroPlan, String> {
    let vhost = f.pipeline == Pipeline::VhostTx;
    let gro = gro_plan(
        f.gro.as_ref(),
        &f.profile.gro,
        f.profile.name,
        f.pipeline == Pipeline::TapGro || vhost,
    )?;
    if device.napi_frags && gro.burst > 1 {
        // tun_get_user hands an IFF_NAPI_FRAGS write to napi_gro_frags itself: there
        // is no queue for MSG_MORE writes to fill, and no poll to batch them.
        return Err("gro.burst: an IFF_NAPI_FRAGS tap (device.napi_frags) runs GRO in each write; there is no NAPI queue to burst".into());
    }
    if vhost && gro.flush_timeout_ns > 0 {
        // The vhost-tx run has no end-of-input hrtimer: a held skb would be lost.
        return Err("gro.flush_timeout_ns: not modelled for vhost-tx (only tap-gro fires the hrtimer at the end)".into());
    }
    if vhost && (!gro.udp_gro_ports.is_empty() || gro.gro_udp_fwd || gro.gro_fraglist) {
        // Only the tap-gro arm sets the features and opens the sockets.
        return Err("gro.udp_gro_socket, rx_udp_gro_forwarding, rx_gro_list: plain UDP GRO is a tap-gro setting".into());
    }
    let legacy = crate::gro::GRO_LEGACY_MAX_SIZE;
    if vhost && (gro.gro_max_size != legacy || gro.gro_ipv4_max_size != legacy) {
        // Only the tap-gro arm sets the tap's GRO sizes (docs/gro.md#big-tcp).
        return Err(
            "gro.gro_max_size: tap-gro only (the vhost-tx arm leaves the tap's GRO sizes at 65536)"
                .into(),
        );
    }
    Ok(gro)
}

impl Default for SkbPlan {
    /// No `[skb]`: every frame as the receive path hands it over, its tag untagged.
    fn default() -> Self {
        SkbPlan {
            recipe: crate::pipeline::frame_meta::SkbRecipe {
                vlan_hwaccel: true,
                ..Default::default()
            },
            overrides: Vec::new(),
        }
    }
}
