//! Whether the real kernel here can run a scenario (the profile, HZ, the offloads and
//! tunnel support it has).

#[allow(unused_imports)]
use super::*;
use crate::features::{is_gre6_frame, is_gre_frame, KernelFeature};

/// Whether this kernel was built with `symbol` (`=y` or `=m`), from `/proc/config.gz`
/// (through `zcat`); `None` when the configuration cannot be read.
pub fn kernel_config(symbol: &str) -> Option<bool> {
    let out = std::process::Command::new("zcat")
        .arg("/proc/config.gz")
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().find_map(|l| {
        if l == format!("# {symbol} is not set") {
            Some(false)
        } else {
            l.strip_prefix(symbol)
                .and_then(|r| r.strip_prefix('='))
                .map(|v| v == "y" || v == "m")
        }
    })
}

pub(super) use crate::arm::load_frames;

/// `Ok(())` when the real kernel here can run `scenario`; otherwise the reason, fit for
/// `sim_only = "..."`. Reads the input pcap (GRE frames need a kernel with GRE).
pub fn expressible(scenario: &Scenario) -> Result<(), ArmError> {
    expressible_with(scenario, &load_frames(scenario)?)
}

pub(super) fn expressible_with(
    scenario: &Scenario,
    frames: &[(u64, u64, Vec<u8>)],
) -> Result<(), ArmError> {
    super::super::host_profile_only(scenario)?;
    crate::arm::real_arm(scenario.pipeline).map_err(ArmError::Unsupported)?;
    if scenario.pipeline != Pipeline::TapGro {
        return Err(ArmError::Unsupported(format!(
            "the tap-gro arm cannot replay a {} scenario",
            scenario.pipeline.name()
        )));
    }
    let plan = &scenario.gro;
    let hz = host_hz()?;
    if plan.hz != hz {
        return Err(ArmError::Unsupported(format!(
            "gro.hz = {}: this kernel runs CONFIG_HZ={hz}",
            plan.hz
        )));
    }
    if !plan.teb_gro {
        return Err(ArmError::Unsupported(
            "gro.teb_gro = false: this kernel always registers the ETH_P_TEB GRO offload (eth_gro_receive, v4.0)"
                .into(),
        ));
    }
    if plan.vlan_gro {
        // The offload needs no setup: vlan_core.c registers it with CONFIG_VLAN_8021Q.
        crate::features::probe(KernelFeature::VlanGro).map_err(|why| {
            ArmError::Unsupported(format!(
                "gro.vlan_gro = true: this kernel has no 802.1Q GRO ({why})"
            ))
        })?;
    }
    if let Some((index, _, _)) = frames.iter().find(|f| is_gre_frame(&f.2)) {
        // The same probe conform uses (features::missing), not a config file.
        crate::features::probe(KernelFeature::Gre).map_err(|why| {
            ArmError::Unsupported(format!(
                "frame {index} is GRE and this kernel has no GRE ({why}): no gre_gro_receive"
            ))
        })?;
    }
    if let Some((index, _, _)) = frames.iter().find(|f| is_gre6_frame(&f.2)) {
        crate::features::probe(KernelFeature::Ip6Gre).map_err(|why| {
            ArmError::Unsupported(format!(
                "frame {index} is GRE over IPv6 and this kernel has no ip6gretap ({why})"
            ))
        })?;
    }
    Ok(())
}
